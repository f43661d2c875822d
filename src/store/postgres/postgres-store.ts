import type pg from "pg";
import type { PipelineEvent } from "../../compiler/pipeline-context.js";
import type { TranscriptEntry } from "../../compiler/stage-types.js";
import type { JsonValue } from "../../definitions/contract.js";
import type { MemoryEntry } from "../../definitions/memory.js";
import { type ErrorView, err, ok, type Result, StagechartError } from "../../errors.js";
import type { AuditEvent } from "../../events/audit.js";
import type { ControlRequest, ControlStatus, Requester } from "../../runtime/live-control.js";
import type { StepCommit } from "../../runtime/persistence.js";
import type { PruneReport, PruneRequest } from "../../runtime/prune-records.js";
import type {
  ClaimFilter,
  DefinitionBundle,
  NewRun,
  RunPatch,
  RunQuery,
  RunRecord,
  RunSummary,
  StepRecord,
  StoredSnapshot,
} from "../../runtime/run-records.js";
import type {
  JournalRow,
  OwnedSteps,
  RunStore,
  RunTranscriptRow,
} from "../../runtime/store-port.js";
import type { TranscriptRow } from "../../runtime/transcripts.js";
import type * as z from "../../zod.js";
import { SnapshotChains } from "../snapshot-chain.js";
import { definitionNotFound, forkUnavailable } from "../store-errors.js";
import { entryWrite } from "../tool-results.js";
import * as controls from "./control-queue.js";
import { copyForked, forkMarks } from "./fork-copy.js";
import * as leases from "./leases.js";
import { migrate } from "./migrations.js";
import { OwnedRun } from "./owned-run.js";
import { postgresFailure, postgresUnavailable, retryingConflicts } from "./postgres-errors.js";
import { prunePostgres } from "./prune.js";
import * as q from "./queries.js";
import { type Query, queryOn } from "./queries.js";
import { type QueueWatch, watchQueue } from "./queue-watch.js";
import * as reads from "./reads.js";
import * as queue from "./run-queue.js";
import * as runRows from "./run-rows.js";
import { appendStep, lastSeqWith, writeJournal, writeTranscripts } from "./step-writes.js";

export interface PostgresStoreOptions {
  /** The clock behind timestamps and, when given, lease expiry (the database's clock otherwise). */
  now?: () => number;
  /** Connections kept open; 10 by default. */
  poolSize?: number;
}

/**
 * The shared store: the SQLite store's tables and meaning in a PostgreSQL database
 * that many processes on many machines use at once. Each step's snapshot and audit events are
 * one transaction, with the run's row locked so its sequence numbers stay gapless; a lease is
 * taken under `SELECT … FOR UPDATE`. Lease expiry follows the database's clock, the one clock
 * every worker shares. The URL's password is never stored, and errors name the store without it.
 */
export class PostgresStore implements RunStore {
  /** Each run's snapshot chain, while this store commits its steps (see `SnapshotChains`). */
  private readonly chains = new SnapshotChains();
  /** How many step commits of each run are on their way. */
  private readonly committing = new Map<string, number>();

  private constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly clock: (() => number) | undefined,
  ) {}

  static async open(
    url: string,
    options: PostgresStoreOptions = {},
  ): Promise<Result<PostgresStore>> {
    let pool: pg.Pool;
    try {
      // Loaded on first use: a command on the SQLite store does not pay for the driver.
      const { default: driver } = await import("pg");
      pool = new driver.Pool({ connectionString: url, max: options.poolSize ?? 10 });
    } catch (cause) {
      return err(postgresUnavailable(url, cause));
    }
    // An idle connection that drops is reported by the next call that needs one, not here.
    pool.on("error", () => {});
    const store = new PostgresStore(pool, url, options.now);
    try {
      const migrated = await store.transaction((_query, client) =>
        migrate(client, options.now ?? Date.now),
      );
      if (migrated.ok) return ok(store);
      await pool.end();
      return migrated;
    } catch (failure) {
      await pool.end().catch(() => {});
      return err(failure instanceof StagechartError ? failure : postgresUnavailable(url, failure));
    }
  }

  /** The connections its pool may hold at once (`poolSize`). */
  get poolSize(): number {
    return this.pool.options.max;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** A run's steps are written through an `OwnedRun`: served from memory, stored in order. */
  ownRun(
    runId: string,
    options?: { leaseTtlMs?: number; owner?: string },
  ): Promise<Result<OwnedSteps>> {
    return OwnedRun.own(this, runId, options);
  }

  async createRun(run: NewRun): Promise<Result<RunRecord>> {
    return runRows.insertRun(this.pooled, run, this.timestamp());
  }

  /** Stores a run for a worker to take (`claimRun`), with status `queued`. */
  async enqueueRun(run: Omit<NewRun, "status">): Promise<Result<RunRecord>> {
    return this.transaction(async (query) => {
      const queued = await runRows.insertRun(query, { ...run, status: "queued" }, this.timestamp());
      if (queued.ok) await queue.announceQueued(query);
      return queued;
    });
  }

  async saveDefinition(hash: string, bundle: DefinitionBundle): Promise<void> {
    await queue.saveDefinition(this.pooled, hash, bundle, this.timestamp());
  }

  async loadDefinition(hash: string): Promise<Result<DefinitionBundle>> {
    const bundle = await queue.loadDefinition(this.pooled, hash);
    return bundle ? ok(bundle) : err(definitionNotFound(hash));
  }

  /** Gives a stopped run back: `owner`'s lease given up and the run queued, in one transaction. */
  async requeueRun(runId: string, owner: string): Promise<boolean> {
    this.chains.forget(runId);
    const at = this.timestamp();
    return this.transaction((query) => queue.requeueRun(query, { runId, owner, at }));
  }

  /** Tells `onQueued` whenever a run is queued, on a connection of its own (`LISTEN`). */
  async watchQueue(onQueued: () => void): Promise<Result<QueueWatch>> {
    return watchQueue(this.url, onQueued);
  }

  /**
   * Cancels a run no worker took yet; `Session/RunNotQueued` once one did, `Session/RunLocked`
   * while a live process (`resume`) drives it.
   */
  async cancelQueuedRun(runId: string, reason?: string): Promise<Result<RunRecord>> {
    const at = this.timestamp();
    const cancelled = await this.transaction((query) =>
      queue.cancelQueuedRun(query, { runId, reason, at }, this.clock),
    );
    return cancelled.ok ? this.getRun(runId) : cancelled;
  }

  /**
   * Takes the oldest queued run (or one whose lease expired), running and leased by `owner`, in
   * one transaction (`FOR UPDATE SKIP LOCKED`): concurrent claimers never get the same run.
   */
  async claimRun(
    owner: string,
    ttlMs: number,
    only: ClaimFilter = {},
  ): Promise<RunRecord | undefined> {
    const at = this.timestamp();
    const runId = await this.transaction((query) =>
      queue.claimRun(query, { owner, ttlMs, at, ...only }, this.clock),
    );
    const claimed = runId === undefined ? undefined : await this.getRun(runId);
    return claimed?.ok ? claimed.value : undefined;
  }

  /** A run that leaves `running` (it ended, or parked) has its keyframe let go. */
  async updateRun(runId: string, patch: RunPatch): Promise<Result<RunRecord>> {
    const updated = await this.transaction((query) =>
      runRows.updateRun(query, runId, patch, this.timestamp()),
    );
    if (updated.ok && updated.value.status !== "running") this.chains.forget(runId);
    return updated;
  }

  async getRun(runId: string): Promise<Result<RunRecord>> {
    return reads.getRun(this.pooled, runId);
  }

  /** Newest first, as summaries (`getRun` has the rest). */
  async listRuns(query: RunQuery = {}): Promise<RunSummary[]> {
    const { status, limit, updatedSince } = query;
    const { rows } = await this.query(q.LIST_RUNS, [
      status ?? null,
      limit ?? null,
      updatedSince ?? null,
    ]);
    return rows as RunSummary[];
  }

  /**
   * Appends the step's events with the run's next sequence numbers, records its journal and
   * transcript entries and the step (whose snapshot becomes the run's latest), settles the control
   * requests it applies and moves its updatedAt, in one transaction: after a failure either all is
   * there or nothing. One statement, so one round trip (step-writes.ts). Its snapshot is stored as
   * the SQLite store's are: a patch against the snapshot this store committed before for the
   * run, or whole (snapshot-chain.ts).
   */
  async commitStep(runId: string, step: StepCommit): Promise<AuditEvent[]> {
    // The database numbers the step as it commits it: the chain learns the number after. A step
    // encoded while another of the run's is on its way starts a new chain (stored whole).
    const underWay = this.committing.get(runId) ?? 0;
    if (underWay > 0) this.chains.forget(runId);
    const snapshot =
      step.snapshot === undefined ? undefined : this.chains.encode(runId, 0, step.snapshot);
    this.committing.set(runId, underWay + 1);
    try {
      const committed = await retryingConflicts(() =>
        appendStep(this.pooled, runId, step, this.timestamp(), snapshot),
      );
      if (snapshot) this.chains.renumber(runId, snapshot, committed.step);
      return committed.events;
    } catch (error) {
      this.chains.forget(runId);
      throw error;
    } finally {
      const left = (this.committing.get(runId) ?? 1) - 1;
      if (left > 0) this.committing.set(runId, left);
      else this.committing.delete(runId);
    }
  }

  /**
   * Creates `run` as a fork of `source` at `step`, in one transaction: its row, the journal and
   * transcript rows `source` had recorded by that step (under the new run's keys), and its first
   * step (`first`: the snapshot it starts from and the events that say so).
   */
  async forkRun(
    source: string,
    step: number,
    run: NewRun,
    first: StepCommit,
  ): Promise<Result<RunRecord>> {
    return this.transaction(async (query): Promise<Result<RunRecord>> => {
      const marks = await forkMarks(query, source, step);
      if (!marks) return err(forkUnavailable(source, step));
      const created = await runRows.insertRun(query, run, this.timestamp());
      if (!created.ok) return created;
      await copyForked(query, source, run.runId, marks);
      await appendStep(query, run.runId, first, this.timestamp());
      if (run.status === "queued") await queue.announceQueued(query);
      return created;
    });
  }

  async getSnapshot(runId: string): Promise<Result<StoredSnapshot>> {
    return reads.getSnapshot(this.pooled, runId);
  }

  async stepsOf(runId: string): Promise<StepRecord[]> {
    return reads.stepsOf(this.pooled, runId);
  }

  async snapshotAtStep(runId: string, step: number): Promise<unknown> {
    return reads.snapshotAtStep(this.pooled, runId, step);
  }

  async lastSeq(runId: string): Promise<number> {
    return lastSeqWith(this.pooled, runId);
  }

  /** In order; a row that does not read back is there in its place, marked `damaged`. */
  async auditOf(runId: string, afterSeq = 0): Promise<AuditEvent[]> {
    return reads.auditOf(this.pooled, runId, afterSeq);
  }

  async get<T>(key: string, shape: z.core.$ZodType<T>): Promise<T | undefined> {
    return reads.journalEntry(this.pooled, key, shape);
  }

  /** A journal entry is a fact: recording a key again keeps the first value. */
  async record(key: string, value: unknown): Promise<void> {
    await writeJournal(this.pooled, [{ key, value }], this.timestamp());
  }

  async put(stageExecutionId: string, key: string, entry: TranscriptEntry): Promise<void> {
    await writeTranscripts(this.pooled, [entryWrite(stageExecutionId, key, entry)]);
  }

  async read(stageExecutionId: string, before?: string): Promise<TranscriptEntry[]> {
    const rows = await reads.transcriptRows(this.pooled, stageExecutionId, before);
    return rows.map((row) => row.entry);
  }

  async transcriptRows(stageExecutionId: string): Promise<TranscriptRow[]> {
    return reads.transcriptRows(this.pooled, stageExecutionId);
  }

  async journalOf(runId: string): Promise<JournalRow[]> {
    return reads.journalOf(this.pooled, runId);
  }

  async transcriptsOf(runId: string): Promise<RunTranscriptRow[]> {
    return reads.transcriptsOf(this.pooled, runId);
  }

  async recall(namespace: string, key: string): Promise<JsonValue | undefined> {
    return reads.recall(this.pooled, namespace, key);
  }

  async remember(namespace: string, key: string, value: JsonValue): Promise<void> {
    await this.query(q.UPSERT_MEMORY, [namespace, key, JSON.stringify(value), this.timestamp()]);
  }

  async recent(namespace: string, limit: number): Promise<MemoryEntry[]> {
    return reads.recent(this.pooled, namespace, limit);
  }

  /** One live owner per run: a lease taken when free, expired, its owner's or its holder gone. */
  async acquireLease(
    runId: string,
    owner: string,
    ttlMs: number,
    holderGone: (holder: string) => boolean = () => false,
  ): Promise<Result<void>> {
    return this.transaction((query) =>
      leases.claimLease(query, { runId, owner, ttlMs, holderGone }, this.clock),
    );
  }

  /** Extends a lease `owner` still holds, in one round trip (`leases.renewLease`). */
  async renewLease(runId: string, owner: string, ttlMs: number): Promise<Result<void>> {
    return leases.renewLease(this.pooled, { runId, owner, ttlMs }, this.clock);
  }

  async releaseLease(runId: string, owner: string): Promise<void> {
    this.chains.forget(runId);
    await leases.releaseLease(this.pooled, runId, owner);
  }

  async leaseHolder(runId: string) {
    return leases.leaseHolder(this.pooled, runId, this.clock?.());
  }

  /** Queues a control event for the run's live owner (`Session/RunNotFound` for no such run). */
  async enqueueControl(
    runId: string,
    request: { event: PipelineEvent; requester: Requester; timeoutMs: number },
  ): Promise<ControlRequest> {
    return controls.enqueueControl(this.pooled, runId, request, this.clock?.());
  }

  async takeControl(id: number): Promise<boolean> {
    return controls.takeControl(this.pooled, id, this.clock?.());
  }

  async pendingControls(runId: string): Promise<ControlRequest[]> {
    return controls.pendingControls(this.pooled, runId);
  }

  async controlRequest(id: number): Promise<ControlRequest | undefined> {
    return controls.controlRequest(this.pooled, id);
  }

  async settleControl(
    id: number,
    outcome: { status: Exclude<ControlStatus, "pending" | "taken">; error?: ErrorView },
  ): Promise<boolean> {
    return controls.settleControl(this.pooled, id, outcome, this.timestamp());
  }

  /**
   * Deletes the ended, unleased runs `request` selects (or cuts their step history), a batch
   * per transaction whose rows are locked `SKIP LOCKED`, recorded in the prune log (prune.ts).
   */
  async prune(request: PruneRequest): Promise<Result<PruneReport>> {
    const report = await prunePostgres(
      {
        query: this.pooled,
        transaction: (work) => this.transaction((query) => work(query)),
        clock: this.clock,
        timestamp: () => this.timestamp(),
      },
      request,
    );
    for (const run of report.runs) this.chains.forget(run.runId);
    return ok(report);
  }

  /** One statement on any pooled connection, as the modules that take a `Query` run it. */
  private readonly pooled: Query = (text, values, name) => this.query(text, values, name);

  private async query(text: string, values?: unknown[], name?: string): Promise<pg.QueryResult> {
    try {
      return await queryOn(this.pool)(text, values, name);
    } catch (cause) {
      throw postgresFailure(this.url, cause);
    }
  }

  /**
   * Runs `work` in a transaction on one connection; a throw rolls it back. One the server aborts
   * as a conflict (a deadlock) is run again: `work` only talks to the database.
   */
  private async transaction<T>(work: (query: Query, client: pg.PoolClient) => Promise<T>) {
    return retryingConflicts(() => this.transactionOnce(work));
  }

  /**
   * A checked-out connection is the caller's to watch: the pool listens for errors on idle ones
   * only, and a connection that drops unwatched (a server restarting, a network cut) throws an
   * unhandled 'error' event that ends the process. Watched, the drop fails the query under way
   * (or the next one), and the connection is released as broken, never pooled again.
   */
  private async transactionOnce<T>(work: (query: Query, client: pg.PoolClient) => Promise<T>) {
    let client: pg.PoolClient | undefined;
    let broken: Error | undefined;
    const dropped = (error: Error) => {
      broken ??= error;
    };
    try {
      client = await this.pool.connect();
      client.on("error", dropped);
      const on = client;
      await on.query("BEGIN");
      const result = await work(queryOn(on), on);
      await on.query("COMMIT");
      return result;
    } catch (cause) {
      await client?.query("ROLLBACK").catch((error: Error) => {
        broken = error;
      });
      throw postgresFailure(this.url, cause);
    } finally {
      client?.off("error", dropped);
      client?.release(broken);
    }
  }

  private timestamp(): string {
    return new Date((this.clock ?? Date.now)()).toISOString();
  }
}
