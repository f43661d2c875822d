import { err, ok, type Result } from "../../errors.js";
import type { ClaimFilter, DefinitionBundle } from "../../runtime/run-records.js";
import { cancelledBeforeStart, decodeBundle } from "../run-queue.js";
import { runLocked, runNotFound, runNotQueued } from "../store-errors.js";
import { claimLease } from "./leases.js";
import { databaseNow, type Query } from "./queries.js";
import { appendStep, lastSeqWith } from "./step-writes.js";

/** Content-addressed: a hash already stored keeps its first bundle. */
export async function saveDefinition(
  query: Query,
  hash: string,
  bundle: DefinitionBundle,
  at: string,
): Promise<void> {
  await query(
    `INSERT INTO definitions (hash, bundle, saved_at) VALUES ($1, $2, $3)
     ON CONFLICT (hash) DO NOTHING`,
    [hash, JSON.stringify(bundle), at],
  );
}

export async function loadDefinition(
  query: Query,
  hash: string,
): Promise<DefinitionBundle | undefined> {
  const { rows } = await query("SELECT bundle FROM definitions WHERE hash = $1", [hash]);
  return rows[0] ? decodeBundle(hash, rows[0].bundle) : undefined;
}

/**
 * The oldest run whose definition is stored that is queued, or running under a lease that
 * expired (its owner was killed), or running with no lease and untouched for a lease's time
 * (its owner stopped on a failing store and gave the lease up; a run being started is touched
 * moments before its lease is stored), not counting runs this claim already passed over. Its
 * row is locked, and rows other claimers hold are skipped, so claimers never wait on each other.
 */
const NEXT_CLAIMABLE = `SELECT r.run_id AS "runId" FROM runs r
    LEFT JOIN leases l ON l.run_id = r.run_id
  WHERE EXISTS (SELECT 1 FROM definitions d WHERE d.hash = r.definition_hash)
    AND ((r.status = 'queued' AND (l.expires_at IS NULL OR l.expires_at <= $1))
      OR (r.status = 'running' AND l.expires_at <= $1)
      OR (r.status = 'running' AND l.run_id IS NULL AND r.updated_at < $3)
      OR (r.status = 'suspended' AND r.wake_at COLLATE "C" <= $5
        AND (l.expires_at IS NULL OR l.expires_at <= $1)))
    AND r.run_id <> ALL($2::text[])
    AND ($4::text[] IS NULL OR r.pipeline_id = ANY($4::text[]))
  ORDER BY r.created_at, r.position LIMIT 1
  FOR UPDATE OF r SKIP LOCKED`;

/**
 * Takes the next claimable run for `owner` inside the caller's transaction: its lease, then its
 * status `running`. The candidate was judged on the lease as this statement's snapshot saw it,
 * so the lease is taken under its own row lock (claimLease), which sees the latest commit: a
 * claimer that took the run over a moment ago wins, and this one moves on to the next run.
 */
export async function claimRun(
  query: Query,
  { owner, ttlMs, at, pipelineIds }: { owner: string; ttlMs: number; at: string } & ClaimFilter,
  clock: (() => number) | undefined,
): Promise<string | undefined> {
  const now = await databaseNow(query, clock);
  const passed: string[] = [];
  for (;;) {
    const { rows } = await query(NEXT_CLAIMABLE, [
      now,
      passed,
      new Date(now - ttlMs).toISOString(),
      pipelineIds ?? null,
      new Date(now).toISOString(),
    ]);
    const runId: string | undefined = rows[0]?.runId;
    if (runId === undefined) return undefined;
    const leased = await claimLease(
      query,
      { runId, owner, ttlMs, holderGone: () => false },
      () => now,
    );
    if (!leased.ok) {
      passed.push(runId);
      continue;
    }
    await query(
      "UPDATE runs SET status = 'running', updated_at = $2, wake_at = NULL WHERE run_id = $1",
      [runId, at],
    );
    return runId;
  }
}

/** The channel a run queued (or queued again) is announced on, for idle workers to wake. */
export const QUEUE_CHANNEL = "stagechart_queue";

/** Announces a queued run inside the caller's transaction: listeners hear it once it commits. */
export async function announceQueued(query: Query): Promise<void> {
  await query("SELECT pg_notify($1, '')", [QUEUE_CHANNEL]);
}

/**
 * Gives a stopped run back, inside the caller's transaction: the lease `owner` holds is given up
 * and the run queued, or nothing changes (false) when `owner` no longer holds it (it was taken
 * over) or the run is no longer running or suspended. The run's row is locked first, as a claim
 * locks it, so a claimer taking the run over at this moment is waited for and then seen.
 */
export async function requeueRun(
  query: Query,
  { runId, owner, at }: { runId: string; owner: string; at: string },
): Promise<boolean> {
  const run = await query(
    "SELECT 1 FROM runs WHERE run_id = $1 AND status IN ('running', 'suspended') FOR UPDATE",
    [runId],
  );
  if (run.rowCount === 0) return false;
  const released = await query("DELETE FROM leases WHERE run_id = $1 AND owner = $2", [
    runId,
    owner,
  ]);
  if (released.rowCount === 0) return false;
  await query("UPDATE runs SET status = 'queued', updated_at = $2 WHERE run_id = $1", [runId, at]);
  await announceQueued(query);
  return true;
}

/**
 * Cancels a run nobody drives yet, inside the caller's transaction: it must be `queued` with no
 * live lease (`resume` of a queued run leases it and leaves it queued while it drives it: that
 * run is cancelled through its owner, `Session/RunLocked` here). The run's row is locked first,
 * as a lease is taken under it, so a lease being taken at this moment is waited for and seen.
 */
export async function cancelQueuedRun(
  query: Query,
  { runId, reason, at }: { runId: string; reason: string | undefined; at: string },
  clock: (() => number) | undefined,
): Promise<Result<void>> {
  const run = await query("SELECT status FROM runs WHERE run_id = $1 FOR UPDATE", [runId]);
  if (run.rowCount === 0) return err(runNotFound(runId));
  const { status } = run.rows[0] as { status: string };
  if (status !== "queued") return err(runNotQueued(runId, status));
  const now = await databaseNow(query, clock);
  const { rows } = await query(
    `SELECT owner, expires_at AS "expiresAt" FROM leases WHERE run_id = $1 AND expires_at > $2`,
    [runId, now],
  );
  const held = rows[0] as { owner: string; expiresAt: string } | undefined;
  if (held) return err(runLocked(runId, held.owner, Number(held.expiresAt)));
  await query("UPDATE runs SET status = 'cancelled', updated_at = $2 WHERE run_id = $1", [
    runId,
    at,
  ]);
  const began = (await lastSeqWith(query, runId)) > 0;
  await appendStep(query, runId, { events: [cancelledBeforeStart(runId, reason, began)] }, at);
  return ok(undefined);
}
