import type Database from "better-sqlite3";
import type { RunSummary } from "../runtime/run-records.js";
import type { RunRow, StepEventsRow } from "./records.js";
import { inRun, ofRunRow, WITH_RUN } from "./step-keys.js";

// A step does not rewrite its run's row (one page less in every commit): a run was last
// updated by its own last change or its last step, whichever came later. A run of any status
// needs the look-up: steps are written after a run ended too (a refused resume, say).
const UPDATED_AT = `MAX(updated_at, COALESCE(
  (SELECT at FROM steps WHERE ${ofRunRow("runs")} ORDER BY steps.id DESC LIMIT 1), ''))`;

const RUN_COLUMNS = `run_id AS runId, pipeline_id AS pipelineId, status,
  created_at AS createdAt, ${UPDATED_AT} AS updatedAt, definition_hash AS definitionHash,
  stagechart_version AS stagechartVersion, options, error, output, wake_at AS wakeAt`;

interface LeaseClaim {
  runId: string;
  owner: string;
  expiresAt: number;
  now: number;
  /** 1 to take the lease whoever holds it. */
  force: 0 | 1;
}

interface LeaseRow {
  owner: string;
  expiresAt: number;
}

interface RunsPage {
  status: string | null;
  since: string | null;
  limit: number;
}

const LIST_RUNS = (statusIs: string) => `SELECT run_id AS runId, pipeline_id AS pipelineId,
    status, created_at AS createdAt, ${UPDATED_AT} AS updatedAt
  FROM runs WHERE ${statusIs} (@since IS NULL OR ${UPDATED_AT} > @since)
  ORDER BY created_at DESC, position DESC LIMIT @limit`;

type Statement<Params extends unknown[] | object, Row = unknown> = Database.Statement<Params, Row>;

/** Every statement the store runs, with its parameters and row shape. */
export interface Statements {
  insertRun: Statement<RunRow>;
  updateRun: Statement<RunRow>;
  run: Statement<[string], RunRow>;
  runs: Statement<RunsPage, RunSummary>;
  runsOfStatus: Statement<RunsPage, RunSummary>;
  runExists: Statement<[string], 1>;
  lastStep: Statement<[string], { step: number; lastSeq: number }>;
  audit: Statement<[string, number], StepEventsRow>;
  claimLease: Statement<LeaseClaim>;
  renewLease: Statement<{ runId: string; owner: string; expiresAt: number }>;
  releaseLease: Statement<{ runId: string; owner: string }>;
  lease: Statement<[string], LeaseRow>;
}

/** Every statement the store runs, prepared once when it opens. */
export function prepareStatements(db: Database.Database): Statements {
  let runsOfStatus: Statements["runsOfStatus"] | undefined;
  return {
    insertRun: db.prepare<RunRow>(
      `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at, definition_hash,
         stagechart_version, options, error, output, wake_at)
       VALUES (@runId, @pipelineId, @status, @createdAt, @updatedAt, @definitionHash,
         @stagechartVersion, @options, @error, @output, @wakeAt)
       ON CONFLICT (run_id) DO NOTHING`,
    ),
    updateRun: db.prepare<RunRow>(
      `UPDATE runs SET status = @status, updated_at = @updatedAt,
         definition_hash = @definitionHash, options = @options, error = @error, output = @output,
         wake_at = @wakeAt
       WHERE run_id = @runId`,
    ),
    run: db.prepare<[string], RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`),
    // Newest first along runs_by_creation, or runs_by_status for one status: both hold every
    // column read here (migration 12), so a page costs its rows, not the whole table, and each
    // row one look-up of its run's last step.
    runs: db.prepare<RunsPage, RunSummary>(LIST_RUNS("")),
    // Prepared when first used: few stores are asked for one status, and preparing it would add
    // some 16 µs to the opening of every one.
    get runsOfStatus() {
      runsOfStatus ??= db.prepare<RunsPage, RunSummary>(LIST_RUNS("status = @status AND"));
      return runsOfStatus;
    },
    runExists: db.prepare<[string], 1>("SELECT 1 FROM runs WHERE run_id = ?").pluck(),

    // A run's sequence numbers only grow from step to step: its last step has the highest.
    lastStep: db.prepare<[string], { step: number; lastSeq: number }>(
      `${WITH_RUN} SELECT step, last_seq AS lastSeq FROM steps WHERE ${inRun()}
       ORDER BY id DESC LIMIT 1`,
    ),
    // Each step's events (migration 9), with the seq the step's first one follows.
    audit: db.prepare<[string, number], StepEventsRow>(
      `${WITH_RUN} SELECT last_seq AS lastSeq, previous, events FROM (
         SELECT id, last_seq, events, LAG(last_seq, 1, 0) OVER (ORDER BY id) AS previous
         FROM steps WHERE ${inRun()}) run_steps
       WHERE last_seq > ? ORDER BY id`,
    ),

    // Taken when free, expired, already this owner's, or forced (its holder is gone);
    // otherwise the upsert changes nothing.
    claimLease: db.prepare<LeaseClaim>(
      `INSERT INTO leases (run_id, owner, expires_at) VALUES (@runId, @owner, @expiresAt)
       ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
       WHERE leases.owner = excluded.owner OR leases.expires_at <= @now OR @force = 1`,
    ),
    renewLease: db.prepare<{ runId: string; owner: string; expiresAt: number }>(
      "UPDATE leases SET expires_at = @expiresAt WHERE run_id = @runId AND owner = @owner",
    ),
    releaseLease: db.prepare<{ runId: string; owner: string }>(
      "DELETE FROM leases WHERE run_id = @runId AND owner = @owner",
    ),
    lease: db.prepare<[string], LeaseRow>(
      "SELECT owner, expires_at AS expiresAt FROM leases WHERE run_id = ?",
    ),
  };
}
