import type Database from "better-sqlite3";
import {
  type PrunedRun,
  type PruneReport,
  type PruneRequest,
  type PruneSelection,
  pruneCriteria,
} from "../runtime/prune-records.js";
import { snapshotOfChain } from "./snapshot-chain.js";
import type { StepHistory } from "./step-history.js";
import { inRun, ofRunRow, STEP_KEY, WITH_RUN } from "./step-keys.js";

/**
 * The steps' one exception to being append-only (below); made again with the table when it is
 * rebuilt (migration 17).
 */
export const STEPS_NO_DELETE = `      CREATE TRIGGER steps_no_delete BEFORE DELETE ON steps
        WHEN NOT EXISTS (SELECT 1 FROM pruned_runs p
          JOIN prunes x ON x.id = p.prune_id AND x.scope = 'runs' AND x.finished_at IS NULL
          JOIN runs r ON r.run_id = p.run_id AND r.created_at = p.created_at
            AND r.status IN ('done', 'failed', 'cancelled')
          WHERE p.run_id = OLD.run_id)
        BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;`;

/**
 * The schema retention adds (migration 15, released: never changed). The prune log (`prunes`,
 * and `pruned_runs`: each run a prune took) is append-only but for a prune's one closing update.
 * The audit log stays append-only with one exception: a step of a run may be deleted once the run
 * is ended and an unfinished prune has recorded taking it whole (the same run: its creation time
 * too), so no other deletion, and no deletion of a live run's steps, gets past the trigger.
 */
export const PRUNE_LOG_SCHEMA = `
      CREATE TABLE prunes (
        id INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        scope TEXT NOT NULL CHECK (scope IN ('runs', 'history')),
        criteria TEXT NOT NULL,
        requested_by TEXT NOT NULL,
        finished_at TEXT,
        runs INTEGER,
        bytes_freed INTEGER
      );
      CREATE TABLE pruned_runs (
        prune_id INTEGER NOT NULL REFERENCES prunes (id),
        run_id TEXT NOT NULL,
        pipeline_id TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        ended_at TEXT NOT NULL,
        steps INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (prune_id, run_id)
      );
      CREATE INDEX pruned_runs_by_run ON pruned_runs (run_id, created_at);
      CREATE TRIGGER prunes_no_delete BEFORE DELETE ON prunes
        BEGIN SELECT RAISE(ABORT, 'the prune log is append-only'); END;
      CREATE TRIGGER prunes_closed_once BEFORE UPDATE ON prunes
        WHEN OLD.finished_at IS NOT NULL OR NEW.id IS NOT OLD.id OR NEW.at IS NOT OLD.at
          OR NEW.scope IS NOT OLD.scope OR NEW.criteria IS NOT OLD.criteria
          OR NEW.requested_by IS NOT OLD.requested_by
        BEGIN SELECT RAISE(ABORT, 'the prune log is append-only'); END;
      CREATE TRIGGER pruned_runs_no_update BEFORE UPDATE ON pruned_runs
        BEGIN SELECT RAISE(ABORT, 'the prune log is append-only'); END;
      CREATE TRIGGER pruned_runs_no_delete BEFORE DELETE ON pruned_runs
        BEGIN SELECT RAISE(ABORT, 'the prune log is append-only'); END;
      CREATE TRIGGER pruned_runs_ended BEFORE INSERT ON pruned_runs
        WHEN NOT EXISTS (SELECT 1 FROM runs WHERE run_id = NEW.run_id
          AND created_at = NEW.created_at AND status IN ('done', 'failed', 'cancelled'))
        BEGIN SELECT RAISE(ABORT, 'only an ended run is pruned'); END;
      DROP TRIGGER steps_no_delete;
${STEPS_NO_DELETE}
    `;

/** A run's last activity: its own last change or its last step, whichever came later. */
const ENDED_AT = `MAX(r.updated_at, COALESCE(
  (SELECT at FROM steps WHERE ${ofRunRow("r")} ORDER BY steps.id DESC LIMIT 1), ''))`;

const ENDED = "('done', 'failed', 'cancelled')";

/** A run with snapshots before its last one, or a last one stored as a patch. */
const HAS_HISTORY = `EXISTS (SELECT 1 FROM steps s WHERE ${ofRunRow("r", "s")}
  AND s.snapshot IS NOT NULL AND (s.snapshot_base IS NOT NULL OR s.id <
    (SELECT MAX(m.id) FROM steps m WHERE ${ofRunRow("r", "m")} AND m.snapshot IS NOT NULL)))`;

/** Oldest first; `@limit` -1 for all of them. */
const candidates = (history: boolean) => `SELECT * FROM (
    SELECT r.run_id AS runId, r.pipeline_id AS pipelineId, r.status, r.created_at AS createdAt,
      r.position, ${ENDED_AT} AS endedAt
    FROM runs r
    WHERE r.status IN ${ENDED}
      AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.run_id = r.run_id AND l.expires_at > @now)
      AND (@keep IS NULL OR r.position NOT IN (SELECT position FROM runs
        WHERE status IN ${ENDED} ORDER BY created_at DESC, position DESC LIMIT @keep))
      ${history ? `AND ${HAS_HISTORY}` : ""})
  WHERE @endedBefore IS NULL OR endedAt < @endedBefore
  ORDER BY createdAt, position LIMIT @limit`;

/** The bytes of a step row's values, as summed row sizes count them. */
const STEP_BYTES = `COALESCE(SUM(length(CAST(run_id AS BLOB)) + length(CAST(at AS BLOB))
  + COALESCE(length(CAST(events AS BLOB)), 0) + COALESCE(length(CAST(journal AS BLOB)), 0)
  + COALESCE(length(CAST(transcripts AS BLOB)), 0) + COALESCE(length(CAST(snapshot AS BLOB)), 0)
  + COALESCE(length(definition_hash), 0) + COALESCE(length(stagechart_version), 0) + 32), 0)`;

type Candidate = Omit<PrunedRun, "steps" | "bytes">;

interface RunSize {
  steps: number;
  lastSeq: number;
  bytes: number;
}

/** What the store lends a prune: its transactions, its clock, and a run's marks to remove. */
export interface PruneHost {
  immediately<T>(work: () => T): T;
  now(): number;
  timestamp(): string;
  /** The runs are gone, whole: what the store keeps about them (their live marks) goes too. */
  gone(runIds: string[]): void;
}

/**
 * Retention on the SQLite store. Runs go oldest first, a batch per IMMEDIATE transaction, with a
 * pause as long as the batch took before the next: another process's commit waiting on the write
 * lock gets it in between (SQLite's busy handler retries on a timer, and a prune that took the
 * lock again at once could keep it from ever getting it). Freed pages go to the file's free
 * list, where later writes reuse them; the file shrinks only with `vacuum` (`VACUUM`).
 */
export class SqlitePrune {
  private readonly statements: {
    runs: Database.Statement<object, Candidate & { position: number }>;
    history: Database.Statement<object, Candidate & { position: number }>;
    size: Database.Statement<[string], RunSize>;
    snapshotBytes: Database.Statement<[string], number>;
    open: Database.Statement<[string, string, string, string]>;
    close: Database.Statement<[string, number, number, number]>;
    record: Database.Statement<unknown[]>;
    deletes: Database.Statement<[string]>[];
    clearEarlier: Database.Statement<[string, number]>;
    keyframe: Database.Statement<[string, string, number]>;
  };

  constructor(
    private readonly db: Database.Database,
    private readonly history: StepHistory,
  ) {
    this.statements = {
      runs: db.prepare(candidates(false)),
      history: db.prepare(candidates(true)),
      size: db.prepare(`${WITH_RUN} SELECT COUNT(*) AS steps, COALESCE(MAX(last_seq), 0) AS lastSeq,
        ${STEP_BYTES} AS bytes FROM steps WHERE ${inRun()}`),
      snapshotBytes: db
        .prepare<[string], number>(
          `${WITH_RUN} SELECT COALESCE(SUM(length(CAST(snapshot AS BLOB))), 0) FROM steps
           WHERE ${inRun()} AND snapshot IS NOT NULL`,
        )
        .pluck(),
      open: db.prepare(
        "INSERT INTO prunes (at, scope, criteria, requested_by) VALUES (?, ?, ?, ?) RETURNING id",
      ),
      close: db.prepare(
        "UPDATE prunes SET finished_at = ?, runs = ?, bytes_freed = ? WHERE id = ?",
      ) as unknown as Database.Statement<[string, number, number, number]>,
      record: db.prepare(
        `INSERT INTO pruned_runs (prune_id, run_id, pipeline_id, status, created_at, ended_at,
           steps, last_seq, bytes, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      // Its steps before its row, which they refer to.
      deletes: [
        "DELETE FROM control_requests WHERE run_id = ?",
        "DELETE FROM leases WHERE run_id = ?",
        `${WITH_RUN} DELETE FROM steps WHERE ${inRun()}`,
        "DELETE FROM runs WHERE run_id = ?",
      ].map((text) => db.prepare<[string]>(text)),
      clearEarlier: db.prepare(
        `${WITH_RUN} UPDATE steps SET snapshot = NULL, snapshot_base = NULL,
           definition_hash = NULL, stagechart_version = NULL
         WHERE ${inRun()} AND steps.id < (SELECT low FROM run) + ? AND snapshot IS NOT NULL`,
      ),
      keyframe: db.prepare(
        `UPDATE steps SET snapshot = ?, snapshot_base = NULL WHERE id = ${STEP_KEY}`,
      ),
    };
  }

  async prune(host: PruneHost, request: PruneRequest): Promise<PruneReport> {
    const before = this.pages();
    const taken: PrunedRun[] = [];
    let batches = 0;
    let pruneId: number | undefined;
    if (request.dryRun) {
      for (const run of this.candidates(request, host.now(), -1))
        taken.push(this.measured(run, request));
    } else {
      const opened = host.immediately(() =>
        this.statements.open.get(
          host.timestamp(),
          request.scope,
          JSON.stringify(pruneCriteria(request)),
          request.requestedBy,
        ),
      ) as { id: number };
      pruneId = opened.id;
      for (;;) {
        const started = performance.now();
        const batch = host.immediately(() => this.batch(pruneId as number, request, host));
        if (batch.length === 0) break;
        if (request.scope === "runs") host.gone(batch.map(({ runId }) => runId));
        taken.push(...batch);
        batches += 1;
        request.onBatch?.({
          batch: batches,
          runs: batch.length,
          bytes: sum(batch.map(({ bytes }) => bytes)),
        });
        if (batch.length < request.batchSize) break;
        await pause(performance.now() - started);
      }
    }
    const freed = request.dryRun
      ? sum(taken.map(({ bytes }) => bytes))
      : before.used - this.pages().used;
    if (pruneId !== undefined) {
      const id = pruneId;
      host.immediately(() => this.statements.close.run(host.timestamp(), taken.length, freed, id));
    }
    const vacuumed = request.vacuum && !request.dryRun;
    if (vacuumed) this.db.exec("VACUUM");
    return {
      ...(pruneId !== undefined && { pruneId }),
      scope: request.scope,
      dryRun: request.dryRun,
      runs: taken,
      bytesFreed: freed,
      storeBytes: { before: before.file, after: this.pages().file },
      batches,
      vacuumed,
    };
  }

  /** One batch, inside its transaction: the runs it took. */
  private batch(pruneId: number, request: PruneRequest, host: PruneHost): PrunedRun[] {
    const at = host.timestamp();
    const runs = this.candidates(request, host.now(), request.batchSize);
    return runs.map((run) => {
      const size = this.statements.size.get(run.runId) as RunSize;
      const compacted = request.scope === "history" ? this.compact(run.runId) : undefined;
      const bytes = compacted ?? size.bytes;
      const { runId, pipelineId, status, createdAt, endedAt } = run;
      this.statements.record.run(
        pruneId,
        runId,
        pipelineId,
        status,
        createdAt,
        endedAt,
        size.steps,
        size.lastSeq,
        bytes,
        at,
      );
      if (request.scope === "runs") for (const remove of this.statements.deletes) remove.run(runId);
      return { runId, pipelineId, status, createdAt, endedAt, steps: size.steps, bytes };
    });
  }

  /** Cuts the run's snapshots down to its last, stored whole; the bytes that freed. */
  private compact(runId: string): number {
    const before = this.statements.snapshotBytes.get(runId) ?? 0;
    const rows = this.history.chainOf(runId);
    const last = rows.at(-1);
    if (!last) return 0;
    const json = JSON.stringify(snapshotOfChain(rows));
    this.statements.clearEarlier.run(runId, last.step);
    this.statements.keyframe.run(json, runId, last.step);
    return before - Buffer.byteLength(json);
  }

  private candidates(request: PruneSelection & PruneRequest, now: number, limit: number) {
    const statement = request.scope === "history" ? this.statements.history : this.statements.runs;
    return statement
      .all({
        now,
        keep: request.keep ?? null,
        endedBefore: request.endedBefore ?? null,
        limit,
      })
      .map(({ position: _, ...run }) => run);
  }

  /** A run a dry run would take, with the bytes it would free. */
  private measured(run: Candidate, request: PruneRequest): PrunedRun {
    const size = this.statements.size.get(run.runId) as RunSize;
    if (request.scope === "runs") return { ...run, steps: size.steps, bytes: size.bytes };
    const rows = this.history.chainOf(run.runId);
    const kept = rows.length === 0 ? 0 : Buffer.byteLength(JSON.stringify(snapshotOfChain(rows)));
    const bytes = (this.statements.snapshotBytes.get(run.runId) ?? 0) - kept;
    return { ...run, steps: size.steps, bytes };
  }

  /** The file's bytes, and those its pages in use hold (the free list's are reused by writes). */
  private pages(): { file: number; used: number } {
    const size = this.db.pragma("page_size", { simple: true }) as number;
    const count = this.db.pragma("page_count", { simple: true }) as number;
    const free = this.db.pragma("freelist_count", { simple: true }) as number;
    return { file: count * size, used: (count - free) * size };
  }
}

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

const pause = (ms: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, Math.max(1, Math.ceil(ms))));
