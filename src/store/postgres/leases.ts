import { err, ok, type Result } from "../../errors.js";
import { leaseLost, runLocked, runNotFound } from "../store-errors.js";
import { databaseNow, nowAt, type Query } from "./queries.js";

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

/**
 * Extends a lease `owner` still holds, even past its expiry if nobody took over, from `clock`'s
 * time or the database's. One conditional UPDATE: it locks the row and re-checks the owner under
 * the lock, as the `FOR UPDATE` of `claimLease` does, in a single round trip.
 */
export async function renewLease(
  query: Query,
  { runId, owner, ttlMs }: { runId: string; owner: string; ttlMs: number },
  clock: (() => number) | undefined,
): Promise<Result<void>> {
  const renewed = await query(
    `UPDATE leases SET expires_at = ${nowAt("$3")} + $4 WHERE run_id = $1 AND owner = $2`,
    [runId, owner, clock?.() ?? null, ttlMs],
  );
  return renewed.rowCount === 1 ? ok(undefined) : err(leaseLost(runId, owner));
}

/** Gives the lease up; a lease held by another owner is left alone. */
export async function releaseLease(query: Query, runId: string, owner: string): Promise<void> {
  await query("DELETE FROM leases WHERE run_id = $1 AND owner = $2", [runId, owner]);
}

/** The lease row, with how long it has left on the database's clock (or `clock`). */
export async function leaseHolder(
  query: Query,
  runId: string,
  clock: number | undefined,
): Promise<{ owner: string; expiresAt: number; expiresInMs: number } | undefined> {
  const { rows } = await query(
    `SELECT owner, expires_at AS "expiresAt", expires_at - ${nowAt("$2")} AS "expiresInMs"
     FROM leases WHERE run_id = $1`,
    [runId, clock ?? null],
  );
  const row = rows[0];
  return (
    row && {
      owner: row.owner,
      expiresAt: Number(row.expiresAt),
      expiresInMs: Number(row.expiresInMs),
    }
  );
}
