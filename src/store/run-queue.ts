import type Database from "better-sqlite3";
import type { AuditEventInput } from "../events/audit.js";
import type { ClaimFilter, DefinitionBundle } from "../runtime/run-records.js";
import { decodeRow } from "../runtime/stored-rows.js";
import * as z from "../zod.js";

/** A stored bundle read back: anything else is `Session/StoreCorrupt`. */
export const DEFINITION_BUNDLE: z.ZodMiniType<DefinitionBundle> = z.object({
  entry: z.string(),
  files: z.record(z.string(), z.string()),
});

export const decodeBundle = (hash: string, text: string): DefinitionBundle =>
  decodeRow(text, DEFINITION_BUNDLE, `definition ${hash}`, { definitionHash: hash });

/**
 * The SQLite store's definitions and claims; the caller holds the write transaction. A worker
 * takes the oldest run whose definition is stored that is queued, or running under a lease that
 * expired (its owner was killed). A running run without a lease row is being started by its own
 * process and is left alone.
 */
export class RunQueue {
  private readonly save: Database.Statement<{ hash: string; bundle: string; at: string }>;
  private readonly load: Database.Statement<[string], string>;
  private readonly next: Database.Statement<
    { now: number; at: string; pipelineIds: string | null },
    string
  >;
  private readonly start: Database.Statement<{ runId: string; at: string }>;
  private readonly lease: Database.Statement<{ runId: string; owner: string; expiresAt: number }>;
  private readonly cancel: Database.Statement<{ runId: string; now: number; at: string }>;
  private readonly requeueOwned: Database.Statement<{ runId: string; owner: string; at: string }>;
  private readonly releaseOwned: Database.Statement<{ runId: string; owner: string }>;

  constructor(db: Database.Database) {
    this.save = db.prepare(
      `INSERT INTO definitions (hash, bundle, saved_at) VALUES (@hash, @bundle, @at)
       ON CONFLICT (hash) DO NOTHING`,
    );
    this.load = db
      .prepare<[string], string>("SELECT bundle FROM definitions WHERE hash = ?")
      .pluck();
    this.next = db
      .prepare<{ now: number; at: string; pipelineIds: string | null }, string>(
        `SELECT r.run_id FROM runs r LEFT JOIN leases l ON l.run_id = r.run_id
         WHERE EXISTS (SELECT 1 FROM definitions d WHERE d.hash = r.definition_hash)
           AND ((r.status = 'queued' AND (l.expires_at IS NULL OR l.expires_at <= @now))
             OR (r.status = 'running' AND l.expires_at <= @now)
             OR (r.status = 'suspended' AND r.wake_at <= @at
               AND (l.expires_at IS NULL OR l.expires_at <= @now)))
           AND (@pipelineIds IS NULL
             OR r.pipeline_id IN (SELECT value FROM json_each(@pipelineIds)))
         ORDER BY r.created_at, r.rowid LIMIT 1`,
      )
      .pluck();
    this.start = db.prepare(
      "UPDATE runs SET status = 'running', updated_at = @at, wake_at = NULL WHERE run_id = @runId",
    );
    this.lease = db.prepare(
      `INSERT INTO leases (run_id, owner, expires_at) VALUES (@runId, @owner, @expiresAt)
       ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at`,
    );
    this.cancel = db.prepare(
      `UPDATE runs SET status = 'cancelled', updated_at = @at
       WHERE run_id = @runId AND status = 'queued'
         AND NOT EXISTS (SELECT 1 FROM leases WHERE run_id = @runId AND expires_at > @now)`,
    );
    this.requeueOwned = db.prepare(
      `UPDATE runs SET status = 'queued', updated_at = @at
       WHERE run_id = @runId AND status IN ('running', 'suspended')
         AND EXISTS (SELECT 1 FROM leases WHERE run_id = @runId AND owner = @owner)`,
    );
    this.releaseOwned = db.prepare("DELETE FROM leases WHERE run_id = @runId AND owner = @owner");
  }

  /** Whether `owner` held the stopped run's lease: it is given up, and the run queued again. */
  requeue(runId: string, owner: string, at: string): boolean {
    if (this.requeueOwned.run({ runId, owner, at }).changes === 0) return false;
    this.releaseOwned.run({ runId, owner });
    return true;
  }

  /**
   * Whether the run was still queued with no live lease (`resume` of a queued run leases it and
   * leaves it queued while it drives it): it is cancelled now, and no worker will take it.
   */
  cancelQueued(runId: string, now: number, at: string): boolean {
    return this.cancel.run({ runId, now, at }).changes > 0;
  }

  /** Content-addressed: a hash already stored keeps its first bundle. */
  saveDefinition(hash: string, bundle: DefinitionBundle, at: string): void {
    this.save.run({ hash, bundle: JSON.stringify(bundle), at });
  }

  loadDefinition(hash: string): DefinitionBundle | undefined {
    const text = this.load.get(hash);
    return text === undefined ? undefined : decodeBundle(hash, text);
  }

  /** Takes the next claimable run for `owner`: running, leased until `now + ttlMs`. */
  claim(
    owner: string,
    ttlMs: number,
    now: number,
    at: string,
    { pipelineIds }: ClaimFilter = {},
  ): string | undefined {
    const runId = this.next.get({
      now,
      at,
      pipelineIds: pipelineIds ? JSON.stringify(pipelineIds) : null,
    });
    if (runId === undefined) return undefined;
    this.lease.run({ runId, owner, expiresAt: now + ttlMs });
    this.start.run({ runId, at });
    return runId;
  }
}

/**
 * What a queued run's log says when it is cancelled before a worker took it: `neverBegan` when
 * its log was empty (a run a stopping worker queued again had begun).
 */
export const cancelledBeforeStart = (
  runId: string,
  reason: string | undefined,
  began: boolean,
): AuditEventInput => ({
  type: "RunCancelled",
  runId,
  payload: { status: "cancelled", ...(!began && { neverBegan: true }), ...(reason && { reason }) },
});
