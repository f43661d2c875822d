import type { PipelineEvent } from "../compiler/pipeline-context.js";
import type { TranscriptEntry } from "../compiler/stage-types.js";
import type { JsonValue } from "../definitions/contract.js";
import type { MemoryEntry } from "../definitions/memory.js";
import type { ErrorView, Result, StagechartError } from "../errors.js";
import type { AuditEvent } from "../events/audit.js";
import type * as z from "../zod.js";
import type { ControlRequest, ControlStatus, Requester } from "./live-control.js";
import type { StepCommit, StepStore } from "./persistence.js";
import type { PruneReport, PruneRequest } from "./prune-records.js";
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
} from "./run-records.js";
import type { TranscriptRow } from "./transcripts.js";

/**
 * The store port: everything the runtime, the command line, the worker and the inspect server
 * ask of a store, split by domain. Every answer may come at once or as a promise (`Awaitable`):
 * the SQLite store answers at once, a store across the network (PostgreSQL) cannot. Callers
 * await every answer, so either kind serves them. Expected conditions are error values; a throw
 * or rejection is misuse or a failing store (`Session/StoreCorrupt`, `Session/StoreUnavailable`).
 * A run's steps are not written through this port but through the `StepStore` that `ownRun`
 * gives the one process that owns the run (see `OwnedSteps`).
 */
export interface RunStore
  extends RunLog,
    StepHistoryStore,
    JournalStore,
    TranscriptsStore,
    MemoryStore,
    LeaseStore,
    ControlStore,
    RunQueueStore,
    PruneStore {
  /**
   * Opens run `runId` for this process to write its steps: a run that does not exist yet is
   * opened empty (the runtime creates it); one that is not over is leased first, to `owner` when
   * given (a worker that claimed it), to a new owner otherwise (`Session/RunLocked` while another
   * live process holds it).
   */
  ownRun(
    runId: string,
    options?: { leaseTtlMs?: number; owner?: string },
  ): Promise<Result<OwnedSteps>>;
  /**
   * Runs whose steps the store lost where it can tell (SQLite: a WAL deleted or damaged after a
   * crash), each as `Session/StoreDamaged` naming the run, what it had and what is left.
   */
  lostSteps?(): Awaitable<StagechartError[]>;
  close(): Awaitable<void>;
}

export type Awaitable<T> = T | Promise<T>;

/** A run opened by `ownRun`: its step store, and when what it wrote is stored. */
export interface OwnedSteps {
  /** What the run's machines write their steps through, synchronously. */
  steps: StepStore;
  /**
   * Resolves once every write so far is stored; rejects once one failed. Absent where every
   * write is stored as it is made (SQLite): the launch then returns in the same turn it began.
   */
  durable?(): Promise<void>;
  /** Waits for every write and gives the lease up; what stopped a write, if anything did. */
  close(): Promise<StagechartError | undefined>;
}

/** Runs and their audit logs: each run's row, its latest snapshot and its events. */
export interface RunLog {
  createRun(run: NewRun): Awaitable<Result<RunRecord>>;
  updateRun(runId: string, patch: RunPatch): Awaitable<Result<RunRecord>>;
  getRun(runId: string): Awaitable<Result<RunRecord>>;
  /** Newest first, as summaries (`getRun` has the rest): at most `limit`, only `status`. */
  listRuns(query?: RunQuery): Awaitable<RunSummary[]>;
  getSnapshot(runId: string): Awaitable<Result<StoredSnapshot>>;
  /**
   * The step's events with the run's next sequence numbers, its journal and transcript entries
   * and its snapshot, in one transaction: all of them are stored, or none.
   */
  commitStep(runId: string, step: StepCommit): Awaitable<AuditEvent[]>;
  auditOf(runId: string, afterSeq?: number): Awaitable<AuditEvent[]>;
  /** The seq of the run's last audit event; 0 before the first. */
  lastSeq(runId: string): Awaitable<number>;
}

/** Every committed step of a run, for the step scrubber and for forks. */
export interface StepHistoryStore {
  /** The run's committed steps, oldest first. */
  stepsOf(runId: string): Awaitable<StepRecord[]>;
  /** The snapshot the run had after step k (the last one committed up to k). */
  snapshotAtStep(runId: string, step: number): Awaitable<unknown>;
  /**
   * Creates `run` as a fork of `source` at `step`, in one transaction: its row, the journal and
   * transcript entries `source` had recorded by that step (under the new run's keys), and its
   * first step. `Session/ForkUnavailable` for a step with no record of what it had recorded.
   */
  forkRun(
    source: string,
    step: number,
    run: NewRun,
    first: StepCommit,
  ): Awaitable<Result<RunRecord>>;
}

/** Recorded model and tool results by idempotency key; the first value is kept. */
export interface JournalStore {
  get<T>(key: string, shape: z.core.$ZodType<T>): Awaitable<T | undefined>;
  record(key: string, value: unknown): Awaitable<void>;
  /**
   * The run's journal entries in the order they were recorded, each value as its JSON text
   * (`decodeJournalEntry` reads one back): what an owned run loads once instead of a read a call.
   */
  journalOf(runId: string): Awaitable<JournalRow[]>;
}

/** Keyed transcript entries per stage execution. */
export interface TranscriptsStore {
  put(stageExecutionId: string, key: string, entry: TranscriptEntry): Awaitable<void>;
  read(stageExecutionId: string, before?: string): Awaitable<TranscriptEntry[]>;
  /** A stage execution's entries with their keys, in key order. */
  transcriptRows(stageExecutionId: string): Awaitable<TranscriptRow[]>;
  /** The run's transcript entries, by stage execution then key. */
  transcriptsOf(runId: string): Awaitable<RunTranscriptRow[]>;
}

/** What pipelines keep between runs. */
export interface MemoryStore {
  recall(namespace: string, key: string): Awaitable<JsonValue | undefined>;
  remember(namespace: string, key: string, value: JsonValue): Awaitable<void>;
  recent(namespace: string, limit: number): Awaitable<MemoryEntry[]>;
}

/** Which process owns a run: one live writer at a time. */
export interface LeaseStore {
  /**
   * Takes the run's lease if it is free, expired or already `owner`'s, or if `holderGone` says
   * its holder no longer exists; `Session/RunLocked` otherwise.
   */
  acquireLease(
    runId: string,
    owner: string,
    ttlMs: number,
    holderGone?: (holder: string) => boolean,
  ): Awaitable<Result<void>>;
  /** Extends a lease `owner` still holds; `Session/LeaseLost` once released or taken over. */
  renewLease(runId: string, owner: string, ttlMs: number): Awaitable<Result<void>>;
  /** Gives the lease up; a lease held by another owner is left alone. */
  releaseLease(runId: string, owner: string): Awaitable<void>;
  /** The run's lease holder, while a lease row exists. */
  leaseHolder(
    runId: string,
  ): Awaitable<{ owner: string; expiresAt: number; expiresInMs: number } | undefined>;
}

/** Control requests for a run's live owner (see `ControlQueue`). */
export interface ControlStore {
  /** `Session/RunNotFound` for no such run. */
  enqueueControl(
    runId: string,
    request: { event: PipelineEvent; requester: Requester; timeoutMs: number },
  ): Awaitable<ControlRequest>;
  /** The run's pending and taken requests, oldest first. */
  pendingControls(runId: string): Awaitable<ControlRequest[]>;
  controlRequest(id: number): Awaitable<ControlRequest | undefined>;
  /** Marks a request taken by the run's owner, on the store's clock. */
  takeControl(id: number): Awaitable<boolean>;
  /** Settles (withdraws) a request still pending; false when taken or settled first. */
  settleControl(
    id: number,
    outcome: { status: Exclude<ControlStatus, "pending" | "taken">; error?: ErrorView },
  ): Awaitable<boolean>;
}

/** Runs stored for a worker to take (`run --detach`), with the definitions they run. */
export interface RunQueueStore {
  /** Stores a run for a worker to take, with status `queued`. */
  enqueueRun(run: Omit<NewRun, "status">): Awaitable<Result<RunRecord>>;
  /** Stores a definition's files by its hash; a hash already stored keeps its first bundle. */
  saveDefinition(hash: string, bundle: DefinitionBundle): Awaitable<void>;
  /** `Session/DefinitionNotFound` for a hash never saved. */
  loadDefinition(hash: string): Awaitable<Result<DefinitionBundle>>;
  /**
   * Cancels a run no worker took yet, its log one `RunCancelled` (`neverBegan`), in one
   * transaction; `Session/RunNotQueued` once a worker took it (or it never was queued).
   */
  cancelQueuedRun(runId: string, reason?: string): Awaitable<Result<RunRecord>>;
  /**
   * Atomically takes the oldest run whose definition is stored that is queued, or running under
   * an expired lease (its owner was killed): sets it running and gives `owner` its lease for
   * `ttlMs`. Concurrent claimers never get the same run; undefined when there is none.
   */
  claimRun(owner: string, ttlMs: number, only?: ClaimFilter): Awaitable<RunRecord | undefined>;
  /**
   * Gives a run back that `owner` stopped (a stopping worker's), in one transaction: the lease
   * `owner` holds is given up and the run, `running` or `suspended`, is queued for a worker to
   * take. False, changing nothing, once `owner` no longer holds the lease or for a run in any
   * other status (a run cancelled meanwhile stays cancelled).
   */
  requeueRun(runId: string, owner: string): Awaitable<boolean>;
  /**
   * Tells `onQueued` each time a run is queued (or queued again), where the store can (PostgreSQL:
   * `LISTEN/NOTIFY`), so an idle worker wakes at once instead of at its next poll.
   */
  watchQueue?(onQueued: () => void): Promise<Result<{ close(): Promise<void> }>>;
}

/**
 * Retention: the one way rows of whole runs leave a store. The audit log is append-only but for
 * this: a store deletes a run's steps only for an ended run its prune log records in the same
 * transaction (its triggers refuse any other deletion).
 */
export interface PruneStore {
  /**
   * Deletes the ended, unleased runs `request` selects, oldest first, `batchSize` per
   * transaction (or, scope `history`, cuts their step history down to the last snapshot);
   * running, queued and suspended runs stay. Records the prune and each run it took in the
   * store's prune log. A dry run only reports.
   */
  prune(request: PruneRequest): Promise<Result<PruneReport>>;
}

/** A journal entry as stored: its key and its value's JSON text. */
export interface JournalRow {
  key: string;
  value: string;
}

/** A transcript entry of a run, with the stage execution it belongs to. */
export interface RunTranscriptRow extends TranscriptRow {
  stageExecutionId: string;
}
