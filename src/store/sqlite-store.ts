import type Database from "better-sqlite3";
import type { PipelineEvent } from "../compiler/pipeline-context.js";
import type { TranscriptEntry } from "../compiler/stage-types.js";
import type { JsonValue } from "../definitions/contract.js";
import type { MemoryEntry } from "../definitions/memory.js";
import type { ErrorView, StagechartError } from "../errors.js";
import { err, ok, type Result } from "../errors.js";
import type { AuditEvent } from "../events/audit.js";
import { decodeJournalEntry } from "../runtime/journal.js";
import type { ControlRequest, ControlStatus, Requester } from "../runtime/live-control.js";
import type { RunEntries, StepCommit, StepStore } from "../runtime/persistence.js";
import type { PruneReport, PruneRequest } from "../runtime/prune-records.js";
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
} from "../runtime/run-records.js";
import type { JournalRow, OwnedSteps, RunStore, RunTranscriptRow } from "../runtime/store-port.js";
import type { TranscriptRow } from "../runtime/transcripts.js";
import type * as z from "../zod.js";
import { ControlRequests } from "./control-requests.js";
import { ForkCopier } from "./fork-copier.js";
import { MarkedRuns } from "./marked-runs.js";
import { MemoryTable } from "./memory-table.js";
import { migrate } from "./migrations.js";
import { QueueAndLeases, type QueueHost } from "./queue-and-leases.js";
import { fromRunRow, newRunRecord, patchedRow, type RunRow, toRunRow } from "./records.js";
import { runIdOfExecution, runIdOfJournalKey } from "./run-ids.js";
import { cancelledBeforeStart } from "./run-queue.js";
import { SqliteConnection } from "./sqlite-connection.js";
import { openDatabase } from "./sqlite-file.js";
import { type PruneHost, SqlitePrune } from "./sqlite-prune.js";
import { prepareStatements, type Statements } from "./statements.js";
import { StepEntries, type StoredEntries } from "./step-entries.js";
import { StepHistory } from "./step-history.js";
import { StepLog } from "./step-log.js";
import { forkUnavailable, runExists, runNotFound, storeUnavailable } from "./store-errors.js";

/** Where a project's runs live, relative to its working directory. */
export const DEFAULT_STORE_PATH = ".stagechart/runs.db";

export interface StoreOptions {
  /** The clock behind every timestamp and lease expiry. */
  now?: () => number;
}

/** What one macrostep leaves behind: its audit events and, usually, the snapshot it led to. */
export type { StepCommit };

/**
 * The embedded store: runs, their latest snapshots, the audit log, the journal,
 * transcripts and leases in one SQLite file. Expected conditions come back as error values;
 * a throw means misuse (an unknown run, a value that is not JSON) or a failing store: a damaged
 * file or row is `Session/StoreCorrupt`, a full, missing or read-only disk
 * `Session/StoreUnavailable`, each naming the file or the row.
 */
export class SqliteStore extends SqliteConnection implements RunStore, StepStore {
  private readonly sql: Statements;
  private readonly history: StepHistory;
  private readonly log: StepLog;
  private readonly memory: MemoryTable;
  private readonly entries: StepEntries;
  private readonly forks: ForkCopier;
  private readonly controls: ControlRequests;
  private readonly queue: QueueAndLeases;
  private readonly marked: MarkedRuns;
  private readonly pruning: SqlitePrune;

  private constructor(db: Database.Database, path: string, now: () => number) {
    super(db, path, now);
    this.sql = prepareStatements(db);
    this.history = new StepHistory(db);
    this.log = new StepLog(this.sql, this.history);
    this.memory = new MemoryTable(db);
    this.entries = new StepEntries(db);
    this.forks = new ForkCopier(db, this.entries);
    this.controls = new ControlRequests(db);
    this.queue = new QueueAndLeases(db, this.sql, this.queueHost);
    this.marked = new MarkedRuns(db, path);
    this.pruning = new SqlitePrune(db, this.history);
  }

  override close(): void {
    this.marked.close();
    super.close();
  }

  /**
   * A run's steps are written straight into the file, each committed before the run goes on:
   * there is nothing to wait for, and the runtime takes the run's lease itself.
   */
  async ownRun(): Promise<Result<OwnedSteps>> {
    return ok({ steps: this, close: async () => undefined });
  }

  static open(path: string, options: StoreOptions = {}): Result<SqliteStore> {
    const now = options.now ?? Date.now;
    let db: Database.Database | undefined;
    let store: SqliteStore | undefined;
    try {
      db = openDatabase(path);
      const migrated = migrate(db, now);
      if (migrated.ok) {
        store = new SqliteStore(db, path, now);
        store.restoreRunRows();
        return ok(store);
      }
      db.close();
      return migrated;
    } catch (cause) {
      try {
        if (store) store.close();
        else db?.close();
      } catch {
        // Reported as the failure to open it.
      }
      return err(storeUnavailable(path, cause));
    }
  }

  /**
   * Stores the run's row, then its mark with the row in it (see `MarkedRuns`): a WAL lost before
   * a checkpoint put the row in the main file cannot take the run with it, as the store puts the
   * row back when it is opened again (`restoreRunRows`), and `resume --force` can start it again.
   */
  createRun(run: NewRun): Result<RunRecord> {
    const created = this.insertRun(run);
    if (!created.ok) return created;
    this.marked.created(created.value.row);
    return ok(created.value.record);
  }

  /** The run's record, and its row as stored (which its mark keeps). */
  private insertRun(run: NewRun): Result<{ record: RunRecord; row: RunRow }> {
    const record = newRunRecord(run, this.timestamp());
    if (!record.ok) return record;
    const row = toRunRow(record.value);
    const inserted = this.written(() => this.sql.insertRun.run(row));
    if (inserted.changes === 0) return err(runExists(run.runId));
    return ok({ record: record.value, row });
  }

  /** Puts back the rows of runs a lost WAL took, from their marks (see `LiveMarks.lostRows`). */
  private restoreRunRows(): void {
    const exists = (runId: string) => this.sql.runExists.get(runId) !== undefined;
    // A mark written before runs could wake has no wakeAt: its run waits for none.
    for (const row of this.marked.lostRows(exists))
      this.written(() => this.sql.insertRun.run({ ...row, wakeAt: row.wakeAt ?? null }));
  }

  /** Stores a run for a worker to take (`claimRun`), with status `queued`. */
  enqueueRun(run: Omit<NewRun, "status">): Result<RunRecord> {
    return this.createRun({ ...run, status: "queued" });
  }

  /** Content-addressed: saving a hash already stored keeps its first bundle. */
  saveDefinition(hash: string, bundle: DefinitionBundle): void {
    this.queue.saveDefinition(hash, bundle);
  }

  loadDefinition(hash: string): Result<DefinitionBundle> {
    return this.queue.loadDefinition(hash);
  }

  /** Takes the oldest queued run (or an expired lease's), running and leased by `owner`. */
  claimRun(owner: string, ttlMs: number, only: ClaimFilter = {}): RunRecord | undefined {
    return this.queue.claim(owner, ttlMs, only);
  }

  /** Gives a stopped run back: `owner`'s lease given up and the run queued, in one transaction. */
  requeueRun(runId: string, owner: string): boolean {
    return this.queue.requeue(runId, owner);
  }

  /**
   * Cancels a run no worker took yet, its log one `RunCancelled`, in one transaction;
   * `Session/RunNotQueued` once one did (or it never was).
   */
  cancelQueuedRun(runId: string, reason?: string): Result<RunRecord> {
    const cancelled = this.immediately((): Result<RunRecord> => {
      const refused = this.queue.cancelQueued(runId);
      if (refused) return err(refused);
      const began = this.lastSeq(runId) > 0;
      this.appendStep(runId, { events: [cancelledBeforeStart(runId, reason, began)] });
      return this.getRun(runId);
    });
    if (cancelled.ok) this.settle(runId);
    return cancelled;
  }

  /**
   * A run that leaves `running` (it ended, or parked) is then checkpointed: its rows move from
   * the WAL into the main file, so losing the WAL later cannot lose it, and its mark goes. With
   * `releasing`, that owner's lease is given up in the same transaction (as `releaseLease`).
   */
  updateRun(runId: string, patch: RunPatch, releasing?: string): Result<RunRecord> {
    if (releasing !== undefined) this.letGo(runId);
    const updated = this.immediately((): Result<RunRecord> => {
      if (releasing !== undefined) this.sql.releaseLease.run({ runId, owner: releasing });
      const current = this.sql.run.get(runId);
      if (!current) return err(runNotFound(runId));
      this.sql.updateRun.run(patchedRow(current, patch, this.timestamp()));
      return this.getRun(runId);
    }, true);
    if (updated.ok && updated.value.status !== "running") this.settle(runId);
    return updated;
  }

  getRun(runId: string): Result<RunRecord> {
    const row = this.guarded(() => this.sql.run.get(runId));
    return row ? ok(fromRunRow(row)) : err(runNotFound(runId));
  }

  /** Newest first, as summaries (`getRun` has the rest). */
  listRuns(query: RunQuery = {}): RunSummary[] {
    const { status, updatedSince, limit = -1 } = query;
    return this.guarded(() => {
      const page = status === undefined ? this.sql.runs : this.sql.runsOfStatus;
      return page.all({ status: status ?? null, since: updatedSince ?? null, limit });
    });
  }

  /**
   * Appends the step — its events with the run's next sequence numbers, its journal and
   * transcript entries, its snapshot — as one row of the history, and settles the control
   * requests it applies, in one transaction: after a crash either all is there or nothing.
   */
  commitStep(runId: string, step: StepCommit): AuditEvent[] {
    return this.immediately(() => this.appendStep(runId, step));
  }

  private appendStep(runId: string, step: StepCommit, carried?: StoredEntries): AuditEvent[] {
    const at = this.timestamp();
    const recorded = this.log.append(runId, step, at, carried);
    const tail = this.log.tailOf(runId);
    if (tail) this.marked.stepsAppended(runId, tail);
    this.controls.settleInStep(step.controls ?? [], at);
    return recorded;
  }

  getSnapshot(runId: string): Result<StoredSnapshot> {
    return this.guarded(() => this.log.latestSnapshot(runId));
  }

  /** The run's committed steps, oldest first. */
  stepsOf(runId: string): StepRecord[] {
    return this.history.stepsOf(runId);
  }

  /** The snapshot the run had after step k (the last one committed up to k). */
  snapshotAtStep(runId: string, step: number): unknown {
    return this.history.snapshotAtStep(runId, step);
  }

  /**
   * Creates `run` as a fork of `source` at `step`, in one transaction: its row and its first
   * step (`first`: the snapshot it starts from and the events that say so), which carries the
   * journal and transcript entries `source` had recorded by that step (under the new run's keys).
   */
  forkRun(source: string, step: number, run: NewRun, first: StepCommit): Result<RunRecord> {
    const forked = this.immediately(() => {
      const copied = this.forks.entriesAt(source, step, run.runId);
      if (!copied) return err(forkUnavailable(source, step));
      const created = this.insertRun(run);
      if (!created.ok) return created;
      this.appendStep(run.runId, first, copied);
      return created;
    });
    if (!forked.ok) return forked;
    // Its owner commits the rest, under a lease; its mark holds its row, as a new run's does.
    this.marked.created(forked.value.row, this.log.tailOf(run.runId));
    this.letGo(run.runId);
    return ok(forked.value.record);
  }

  lastSeq(runId: string): number {
    return this.guarded(() => this.log.lastSeq(runId));
  }

  /**
   * The run's audit events in order, those after `afterSeq` when given. A row that does not read
   * back is there in its place, marked `damaged`, so one bad row does not hide the log.
   */
  auditOf(runId: string, afterSeq = 0): AuditEvent[] {
    return this.guarded(() => this.log.auditOf(runId, afterSeq));
  }

  get<T>(key: string, shape: z.core.$ZodType<T>): T | undefined {
    const value = this.guarded(() => this.entries.journalValue(key));
    return value === undefined ? undefined : decodeJournalEntry(key, value, shape);
  }

  /**
   * Entries written outside a step (a run's are written with its steps): each is a step of its
   * own, without events. A journal entry is a fact: recording a key again keeps the first value.
   */
  record(key: string, value: unknown): void {
    const journal = [{ key, value }];
    this.immediately(() => this.appendStep(runIdOfJournalKey(key), { events: [], journal }));
  }

  put(stageExecutionId: string, key: string, entry: TranscriptEntry): void {
    const transcripts = [{ stageExecutionId, key, entry }];
    const runId = runIdOfExecution(stageExecutionId);
    this.immediately(() => this.appendStep(runId, { events: [], transcripts }));
  }

  read(stageExecutionId: string, before?: string): TranscriptEntry[] {
    const rows = this.guarded(() => this.entries.transcriptRows(stageExecutionId, before));
    return rows.map((row) => row.entry);
  }

  transcriptRows(stageExecutionId: string): TranscriptRow[] {
    const rows = this.guarded(() => this.entries.transcriptRows(stageExecutionId));
    return rows.map(({ key, entry }) => ({ key, entry }));
  }

  /** The run's journal (values as their JSON text) and transcripts, from its steps' rows. */
  entriesOf(runId: string): RunEntries {
    return this.guarded(() => this.entries.entriesOf(runId));
  }

  /** The run's journal entries in the order recorded, values as their JSON text. */
  journalOf(runId: string): JournalRow[] {
    return this.guarded(() => this.entries.journalOf(runId));
  }

  /** The run's transcript entries, by stage execution then key. */
  transcriptsOf(runId: string): RunTranscriptRow[] {
    return this.guarded(() => this.entries.transcriptsOf(runId));
  }

  /** What pipelines keep between runs (`PipelineMemory`), in the `memory` table. */
  recall(namespace: string, key: string): JsonValue | undefined {
    return this.guarded(() => this.memory.recall(namespace, key));
  }

  remember(namespace: string, key: string, value: JsonValue): void {
    this.written(() => this.memory.remember(namespace, key, value, this.timestamp()));
  }

  recent(namespace: string, limit: number): MemoryEntry[] {
    return this.guarded(() => this.memory.recent(namespace, limit));
  }

  /** One live process per run: see `QueueAndLeases.acquire`. */
  acquireLease(
    runId: string,
    owner: string,
    ttlMs: number,
    holderGone: (holder: string) => boolean = () => false,
  ): Result<void> {
    return this.queue.acquire(runId, owner, ttlMs, holderGone);
  }

  /** Extends a lease `owner` still holds; `Session/LeaseLost` once released or taken over. */
  renewLease(runId: string, owner: string, ttlMs: number): Result<void> {
    return this.queue.renew(runId, owner, ttlMs);
  }

  /** Gives the lease up; a lease held by another owner is left alone. */
  releaseLease(runId: string, owner: string): void {
    this.queue.release(runId, owner);
  }

  // Written out rather than named: the package ships the declarations its types reach, and
  // `QueueAndLeases` takes better-sqlite3's objects, whose types an app does not install.
  leaseHolder(
    runId: string,
  ): { owner: string; expiresAt: number; expiresInMs: number } | undefined {
    return this.queue.holder(runId);
  }

  /** Queues a control event for the run's live owner (`Session/RunNotFound` for no such run). */
  enqueueControl(
    runId: string,
    request: { event: PipelineEvent; requester: Requester; timeoutMs: number },
  ): ControlRequest {
    return this.immediately(() => {
      if (this.sql.runExists.get(runId) === undefined) throw runNotFound(runId);
      return this.controls.enqueue(runId, request, this.now());
    });
  }

  takeControl(id: number): boolean {
    return this.written(() => this.controls.takeControl(id, this.now()));
  }

  pendingControls(runId: string): ControlRequest[] {
    return this.guarded(() => this.controls.pendingControls(runId));
  }

  controlRequest(id: number): ControlRequest | undefined {
    return this.guarded(() => this.controls.controlRequest(id));
  }

  settleControl(
    id: number,
    outcome: { status: Exclude<ControlStatus, "pending" | "taken">; error?: ErrorView },
  ): boolean {
    return this.written(() => this.controls.settleAt(id, outcome, this.timestamp()));
  }

  /**
   * Deletes the ended, unleased runs `request` selects (or cuts their step history), a batch
   * per transaction, recorded in the prune log (see `SqlitePrune`). A pruned run's live mark
   * goes too, so opening the store again never puts its row back.
   */
  async prune(request: PruneRequest): Promise<Result<PruneReport>> {
    return ok(await this.pruning.prune(this.pruneHost, request));
  }

  private readonly pruneHost: PruneHost = {
    immediately: (work) => this.immediately(work),
    now: () => this.now(),
    timestamp: () => this.timestamp(),
    gone: (runIds) => {
      for (const runId of runIds) this.log.release(runId);
      this.marked.gone(runIds);
    },
  };

  /** Runs whose steps the store lost, as its marks tell (`LiveMarks.lostSteps`). */
  lostSteps(): StagechartError[] {
    return this.marked.lostSteps(
      (runId) => this.guarded(() => this.sql.lastStep.get(runId)),
      (runId) => this.guarded(() => this.sql.runExists.get(runId)) !== undefined,
    );
  }

  /** The run left `running`: let go, its mark removed with the next checkpoint. */
  private settle(runId: string): void {
    this.letGo(runId);
    this.marked.leftRunning(runId);
  }

  /** The run is not written here for now: what is kept about it in memory is let go. */
  private letGo(runId: string): void {
    this.log.release(runId);
    this.marked.forget(runId);
  }

  private readonly queueHost: QueueHost = {
    guarded: (work) => this.guarded(work),
    written: (work) => this.written(work),
    immediately: (work) => this.immediately(work),
    now: () => this.now(),
    timestamp: () => this.timestamp(),
    letGo: (runId) => this.letGo(runId),
    getRun: (runId) => this.getRun(runId),
  };

  protected committed(): void {
    this.marked.committed();
  }

  protected rolledBack(): void {
    this.log.rolledBack();
    this.marked.rolledBack();
  }
}
