import { err, ok, type Result } from "../../errors.js";
import { runLocked, runNotFound } from "../store-errors.js";
import type { Query } from "./queries.js";
import { databaseNow } from "./queries.js";

interface Claim {
  runId: string;
  owner: string;
  ttlMs: number;
  /** Whether the lease's holder no longer exists: its lease is taken at once. */
  holderGone: (holder: string) => boolean;
}

/**
 * Takes a run's lease inside the caller's transaction. The run's row is locked first, as a
 * worker's claim locks it before it takes the lease: taken in the other order, a lease inserted
 * here would wait on the claim's row lock (the lease's foreign key) while the claim waits on
 * that lease, and PostgreSQL would abort one of them. Under that lock the lease row is judged,
 * so processes asking at once take turns; a run without a lease row gets one inserted.
 * Lease time is `clock` when given (tests), else the database's: one clock for every machine.
 */
export async function claimLease(
  query: Query,
  { runId, owner, ttlMs, holderGone }: Claim,
  clock: (() => number) | undefined,
): Promise<Result<void>> {
  const run = await query("SELECT 1 FROM runs WHERE run_id = $1 FOR UPDATE", [runId]);
  if (run.rowCount === 0) return err(runNotFound(runId));
  const now = await databaseNow(query, clock);
  const expiresAt = now + ttlMs;
  for (;;) {
    const { rows } = await query(
      `SELECT owner, expires_at AS "expiresAt" FROM leases WHERE run_id = $1 FOR UPDATE`,
      [runId],
    );
    const held = rows[0] as { owner: string; expiresAt: string } | undefined;
    if (!held) {
      const inserted = await query(
        `INSERT INTO leases (run_id, owner, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT (run_id) DO NOTHING`,
        [runId, owner, expiresAt],
      );
      if (inserted.rowCount === 1) return ok(undefined);
      continue;
    }
    const free = held.owner === owner || Number(held.expiresAt) <= now;
    if (!free && !holderGone(held.owner)) {
      return err(runLocked(runId, held.owner, Number(held.expiresAt)));
    }
    await query("UPDATE leases SET owner = $2, expires_at = $3 WHERE run_id = $1", [
      runId,
      owner,
      expiresAt,
    ]);
    return ok(undefined);
  }
}
