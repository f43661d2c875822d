import type Database from "better-sqlite3";
import { err, ok, type Result, type StagechartError } from "../errors.js";
import type { ClaimFilter, DefinitionBundle, RunRecord } from "../runtime/run-records.js";
import { RunQueue } from "./run-queue.js";
import type { Statements } from "./statements.js";
import {
  definitionNotFound,
  leaseLost,
  runLocked,
  runNotFound,
  runNotQueued,
} from "./store-errors.js";

/** What the store lends its queue and leases: its ways to run a call on the file, and its runs. */
export interface QueueHost {
  guarded<T>(work: () => T): T;
  written<T>(work: () => T): T;
  immediately<T>(work: () => T): T;
  now(): number;
  timestamp(): string;
  /** The run changes hands: what the store keeps of it in memory is let go. */
  letGo(runId: string): void;
  getRun(runId: string): Result<RunRecord>;
}

/** A lease row as stored, and how long it has left on the store's clock. */
export interface LeaseHolder {
  owner: string;
  expiresAt: number;
  expiresInMs: number;
}

/**
 * The SQLite store's run queue and leases: which process runs a run. One live process per run
 * holds its lease; a worker claims a queued run (or one whose owner let its lease expire) by
 * taking its lease, and gives a run it stops back to the queue. A lease that changes hands here
 * lets go of what the store kept of the run in memory, as only the run's lease holder writes it.
 */
export class QueueAndLeases {
  private readonly queue: RunQueue;

  constructor(
    db: Database.Database,
    private readonly sql: Statements,
    private readonly host: QueueHost,
  ) {
    this.queue = new RunQueue(db);
  }

  /** Content-addressed: saving a hash already stored keeps its first bundle. */
  saveDefinition(hash: string, bundle: DefinitionBundle): void {
    this.host.written(() => this.queue.saveDefinition(hash, bundle, this.host.timestamp()));
  }

  loadDefinition(hash: string): Result<DefinitionBundle> {
    const bundle = this.host.guarded(() => this.queue.loadDefinition(hash));
    return bundle ? ok(bundle) : err(definitionNotFound(hash));
  }

  /** Takes the oldest queued run (or an expired lease's), running and leased by `owner`. */
  claim(owner: string, ttlMs: number, only: ClaimFilter): RunRecord | undefined {
    const { host } = this;
    const runId = host.immediately(() =>
      this.queue.claim(owner, ttlMs, host.now(), host.timestamp(), only),
    );
    if (runId !== undefined) host.letGo(runId);
    const claimed = runId === undefined ? undefined : host.getRun(runId);
    return claimed?.ok ? claimed.value : undefined;
  }

  /** Gives a stopped run back: `owner`'s lease given up and the run queued, in one transaction. */
  requeue(runId: string, owner: string): boolean {
    this.host.letGo(runId);
    return this.host.immediately(() => this.queue.requeue(runId, owner, this.host.timestamp()));
  }

  /**
   * Cancels the run if no worker took it yet, inside the caller's transaction; otherwise why not:
   * `Session/RunNotQueued` once one did (or it never was), `Session/RunLocked` while a live
   * process drives it queued (`resume`), `Session/RunNotFound` for no such run.
   */
  cancelQueued(runId: string): StagechartError | undefined {
    if (this.queue.cancelQueued(runId, this.host.now(), this.host.timestamp())) return undefined;
    const run = this.host.getRun(runId);
    if (!run.ok) return run.error;
    const holder = this.holder(runId);
    return run.value.status === "queued" && holder
      ? runLocked(runId, holder.owner, holder.expiresAt)
      : runNotQueued(runId, run.value.status);
  }

  /**
   * One live process per run. The lease is taken when free, when its holder let it expire (a
   * crashed owner must not lock a run forever), when `owner` already holds it, or when
   * `holderGone` says its holder no longer exists.
   */
  acquire(
    runId: string,
    owner: string,
    ttlMs: number,
    holderGone: (holder: string) => boolean,
  ): Result<void> {
    const now = this.host.now();
    const lease = { runId, owner, expiresAt: now + ttlMs, now };
    this.host.letGo(runId);
    return this.host.immediately((): Result<void> => {
      if (this.sql.runExists.get(runId) === undefined) return err(runNotFound(runId));
      if (this.sql.claimLease.run({ ...lease, force: 0 }).changes > 0) return ok(undefined);
      // The claim failed, so a live lease of another owner is there: the transaction holds the
      // write lock, nobody can have released it since.
      const held = this.sql.lease.get(runId) as { owner: string; expiresAt: number };
      if (!holderGone(held.owner)) return err(runLocked(runId, held.owner, held.expiresAt));
      this.sql.claimLease.run({ ...lease, force: 1 });
      return ok(undefined);
    });
  }

  /**
   * Extends a lease `owner` still holds, even one past its expiry that nobody took over.
   * `Session/LeaseLost` when it was released or taken over: the run is no longer this owner's.
   */
  renew(runId: string, owner: string, ttlMs: number): Result<void> {
    const lease = { runId, owner, expiresAt: this.host.now() + ttlMs };
    const renewed = this.host.written(() => this.sql.renewLease.run(lease).changes > 0);
    return renewed ? ok(undefined) : err(leaseLost(runId, owner));
  }

  /** Gives the lease up; a lease held by another owner is left alone. */
  release(runId: string, owner: string): void {
    this.host.letGo(runId);
    this.host.written(() => this.sql.releaseLease.run({ runId, owner }));
  }

  holder(runId: string): LeaseHolder | undefined {
    const held = this.host.guarded(() => this.sql.lease.get(runId));
    return held && { ...held, expiresInMs: held.expiresAt - this.host.now() };
  }
}
