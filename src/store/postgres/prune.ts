import {
  type PrunedRun,
  type PruneReport,
  type PruneRequest,
  type PruneScope,
  pruneCriteria,
} from "../../runtime/prune-records.js";
import type { Query } from "./queries.js";
import { databaseNow } from "./queries.js";
import { SNAPSHOT_CHAIN, type SnapshotRow, snapshotOfRows } from "./snapshot-text.js";

/** The tables that hold runs: what a prune frees, and what the store's size counts. */
const RUN_TABLES = ["runs", "steps", "journal", "transcripts", "control_requests", "leases"];

const ENDED = "('done', 'failed', 'cancelled')";

/** A run with snapshots before its last one, or a last one stored as a patch. */
const HAS_HISTORY = `AND EXISTS (SELECT 1 FROM steps s WHERE s.run_id = r.run_id
  AND s.snapshot IS NOT NULL AND (s.snapshot_base IS NOT NULL OR s.step <
    (SELECT MAX(step) FROM steps m WHERE m.run_id = r.run_id AND m.snapshot IS NOT NULL)))`;

/**
 * Oldest first: $1 ended before, $2 now (leases), $3 keep, $4 limit (null: all). A batch locks
 * the rows it takes and skips those locked: a run committing a step holds its row's lock, and a
 * process taking a run's lease locks its row first, so neither waits on a prune, nor it on them.
 */
const candidates = (scope: PruneScope, lock: boolean) => `SELECT r.run_id AS "runId",
    r.pipeline_id AS "pipelineId", r.status, r.created_at AS "createdAt", r.updated_at AS "endedAt"
  FROM runs r
  WHERE r.status IN ${ENDED}
    AND ($1::text IS NULL OR r.updated_at COLLATE "C" < $1::text)
    AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.run_id = r.run_id AND l.expires_at > $2::bigint)
    AND ($3::bigint IS NULL OR r.position NOT IN (SELECT position FROM runs
      WHERE status IN ${ENDED} ORDER BY created_at DESC, position DESC LIMIT $3::bigint))
    ${scope === "history" ? HAS_HISTORY : ""}
  ORDER BY r.created_at, r.position LIMIT $4::bigint
  ${lock ? "FOR UPDATE OF r SKIP LOCKED" : ""}`;

/** Each run's steps, last seq and summed row sizes (all of its rows; its snapshots alone). */
const SIZES = `SELECT u.run AS "runId",
    (SELECT COUNT(*) FROM steps WHERE run_id = u.run)::int AS steps,
    (SELECT COALESCE(MAX(last_seq), 0) FROM steps WHERE run_id = u.run)::int AS "lastSeq",
    ((SELECT COALESCE(SUM(pg_column_size(s.*)), 0) FROM steps s WHERE s.run_id = u.run)
      + (SELECT COALESCE(SUM(pg_column_size(j.*)), 0) FROM journal j WHERE j.run_id = u.run)
      + (SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM transcripts t WHERE t.run_id = u.run)
      + (SELECT COALESCE(SUM(pg_column_size(c.*)), 0) FROM control_requests c WHERE c.run_id = u.run)
      + (SELECT COALESCE(SUM(pg_column_size(r.*)), 0) FROM runs r WHERE r.run_id = u.run))::bigint
      AS bytes,
    (SELECT COALESCE(SUM(pg_column_size(snapshot)), 0) FROM steps
      WHERE run_id = u.run AND snapshot IS NOT NULL)::bigint AS "snapshotBytes"
  FROM unnest($1::text[]) AS u (run)`;

type Candidate = Omit<PrunedRun, "steps" | "bytes">;

interface RunSize {
  runId: string;
  steps: number;
  lastSeq: number;
  bytes: string;
  snapshotBytes: string;
}

/** What the store lends a prune: one statement, a transaction, its clock. */
export interface PostgresPruneHost {
  query: Query;
  transaction<T>(work: (query: Query) => Promise<T>): Promise<T>;
  clock: (() => number) | undefined;
  timestamp(): string;
}

/**
 * Retention on the PostgreSQL store: a batch per transaction, its rows locked with
 * `SKIP LOCKED`, so live runs' commits go on meanwhile. Deleted rows' space is reused once
 * (auto)vacuum has passed; it goes back to the operating system only with `VACUUM FULL`, which
 * locks the tables, and which a prune never runs. What a prune frees is measured as the deleted
 * rows' sizes (`pg_column_size`), read in the transaction that deletes them.
 */
export async function prunePostgres(
  host: PostgresPruneHost,
  request: PruneRequest,
): Promise<PruneReport> {
  const before = await storeBytes(host.query);
  const taken: PrunedRun[] = [];
  let batches = 0;
  let pruneId: number | undefined;
  if (request.dryRun) {
    const runs = await candidatesOf(host.query, host, request, null, false);
    const sizes = await sizesOf(host.query, runs);
    for (const run of runs) {
      const size = sizes.get(run.runId) as RunSize;
      const bytes =
        request.scope === "runs"
          ? Number(size.bytes)
          : Number(size.snapshotBytes) - (await latestJson(host.query, run.runId)).bytes;
      taken.push({ ...run, steps: size.steps, bytes });
    }
  } else {
    const { rows } = await host.query(
      `INSERT INTO prunes (at, scope, criteria, requested_by) VALUES ($1, $2, $3, $4)
       RETURNING id`,
      [
        host.timestamp(),
        request.scope,
        JSON.stringify(pruneCriteria(request)),
        request.requestedBy,
      ],
    );
    const id = Number(rows[0].id);
    pruneId = id;
    for (;;) {
      const batch = await host.transaction((query) => pruneBatch(query, id, request, host));
      if (batch.length === 0) break;
      taken.push(...batch);
      batches += 1;
      request.onBatch?.({
        batch: batches,
        runs: batch.length,
        bytes: batch.reduce((total, { bytes }) => total + bytes, 0),
      });
      if (batch.length < request.batchSize) break;
    }
  }
  const freed = taken.reduce((total, { bytes }) => total + bytes, 0);
  if (pruneId !== undefined)
    await host.query(
      "UPDATE prunes SET finished_at = $1, runs = $2, bytes_freed = $3 WHERE id = $4",
      [host.timestamp(), taken.length, freed, pruneId],
    );
  const vacuumed = request.vacuum && !request.dryRun;
  if (vacuumed) await host.query(`VACUUM (ANALYZE) ${RUN_TABLES.join(", ")}`);
  return {
    ...(pruneId !== undefined && { pruneId }),
    scope: request.scope,
    dryRun: request.dryRun,
    runs: taken,
    bytesFreed: freed,
    storeBytes: { before, after: await storeBytes(host.query) },
    batches,
    vacuumed,
  };
}

async function pruneBatch(
  query: Query,
  pruneId: number,
  request: PruneRequest,
  host: PostgresPruneHost,
): Promise<PrunedRun[]> {
  const at = host.timestamp();
  const runs = await candidatesOf(query, host, request, request.batchSize, true);
  if (runs.length === 0) return [];
  const sizes = await sizesOf(query, runs);
  const taken: PrunedRun[] = [];
  for (const run of runs) {
    const size = sizes.get(run.runId) as RunSize;
    const bytes =
      request.scope === "runs" ? Number(size.bytes) : await compact(query, run.runId, size);
    taken.push({ ...run, steps: size.steps, bytes });
    await query(
      `INSERT INTO pruned_runs (prune_id, run_id, pipeline_id, status, created_at, ended_at,
         steps, last_seq, bytes, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        pruneId,
        run.runId,
        run.pipelineId,
        run.status,
        run.createdAt,
        run.endedAt,
        size.steps,
        size.lastSeq,
        bytes,
        at,
      ],
    );
  }
  if (request.scope === "runs") {
    const ids = runs.map(({ runId }) => runId);
    // Its steps and entries before its row, which they refer to.
    for (const table of ["control_requests", "leases", "journal", "transcripts", "steps", "runs"])
      await query(`DELETE FROM ${table} WHERE run_id = ANY($1::text[])`, [ids]);
  }
  return taken;
}

/**
 * Cuts the run's snapshots down to its last, stored whole; the bytes that freed, counting the
 * new keyframe at its JSON's length (as a dry run counts it: TOAST may store it in fewer).
 */
async function compact(query: Query, runId: string, size: RunSize): Promise<number> {
  const latest = await latestJson(query, runId);
  if (!latest.json) return 0;
  await query(
    `UPDATE steps SET snapshot = NULL, snapshot_base = NULL, definition_hash = NULL,
       stagechart_version = NULL
     WHERE run_id = $1 AND step < $2 AND snapshot IS NOT NULL`,
    [runId, latest.step],
  );
  await query(
    "UPDATE steps SET snapshot = $3, snapshot_base = NULL WHERE run_id = $1 AND step = $2",
    [runId, latest.step, latest.json],
  );
  return Number(size.snapshotBytes) - latest.bytes;
}

/** The run's latest snapshot as JSON, the step that stored it and the JSON's length. */
async function latestJson(
  query: Query,
  runId: string,
): Promise<{ json?: string; step: number; bytes: number }> {
  const { rows } = await query(SNAPSHOT_CHAIN, [runId, 2 ** 31 - 1]);
  const last = rows.at(-1) as SnapshotRow | undefined;
  if (!last) return { step: 0, bytes: 0 };
  const json = JSON.stringify(snapshotOfRows(rows as SnapshotRow[]));
  return { json, step: last.step, bytes: Buffer.byteLength(json) };
}

async function candidatesOf(
  query: Query,
  host: PostgresPruneHost,
  request: PruneRequest,
  limit: number | null,
  lock: boolean,
): Promise<Candidate[]> {
  const now = await databaseNow(query, host.clock);
  const { rows } = await query(candidates(request.scope, lock), [
    request.endedBefore ?? null,
    now,
    request.keep ?? null,
    limit,
  ]);
  return rows as Candidate[];
}

async function sizesOf(query: Query, runs: Candidate[]): Promise<Map<string, RunSize>> {
  const { rows } = await query(SIZES, [runs.map(({ runId }) => runId)]);
  return new Map((rows as RunSize[]).map((row) => [row.runId, row]));
}

/** The store's tables that hold runs, with their indexes and TOAST. */
async function storeBytes(query: Query): Promise<number> {
  const { rows } = await query(
    `SELECT (${RUN_TABLES.map((table) => `pg_total_relation_size('${table}')`).join(" + ")})::bigint
       AS bytes`,
  );
  return Number(rows[0].bytes);
}
