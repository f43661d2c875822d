import { err, ok, type Result } from "../errors.js";
import type { Statements } from "./statements.js";
import { leaseLost, runLocked, runNotFound } from "./store-errors.js";

type LeaseStatements = Pick<Statements, "runExists" | "claimLease" | "lease" | "renewLease">;

/**
 * Takes the run's lease for `owner` until `expiresAt`, inside the caller's IMMEDIATE transaction:
 * when free, expired, already `owner`'s, or held by an owner `holderGone` says is gone.
 */
export function claimLease(
  sql: LeaseStatements,
  lease: { runId: string; owner: string; expiresAt: number; now: number },
  holderGone: (holder: string) => boolean,
): Result<void> {
  const { runId } = lease;
  if (sql.runExists.get(runId) === undefined) return err(runNotFound(runId));
  if (sql.claimLease.run({ ...lease, force: 0 }).changes > 0) return ok(undefined);
  // The claim failed, so a live lease of another owner is there: the transaction holds the
  // write lock, nobody can have released it since.
  const holder = sql.lease.get(runId) as { owner: string; expiresAt: number };
  if (!holderGone(holder.owner)) return err(runLocked(runId, holder.owner, holder.expiresAt));
  sql.claimLease.run({ ...lease, force: 1 });
  return ok(undefined);
}

/** Extends a lease `owner` still holds; `Session/LeaseLost` when released or taken over. */
export function renewLease(
  sql: LeaseStatements,
  lease: { runId: string; owner: string; expiresAt: number },
): Result<void> {
  if (sql.renewLease.run(lease).changes > 0) return ok(undefined);
  return err(leaseLost(lease.runId, lease.owner));
}
