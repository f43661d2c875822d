import type { PipelineEvent } from "../../compiler/pipeline-context.js";
import type { TranscriptEntry } from "../../compiler/stage-types.js";
import type { JsonValue } from "../../definitions/contract.js";
import type { MemoryEntry } from "../../definitions/memory.js";
import type { ErrorView, Result, StagechartError } from "../../errors.js";
import type { AuditEvent } from "../../events/audit.js";
import type { ControlRequest, ControlStatus, Requester } from "../../runtime/control.js";
import type { StepCommit } from "../../runtime/persistence.js";
import type { TranscriptRow } from "../../runtime/transcripts.js";
import type * as z from "../../zod.js";
import type { StepRecord } from "../history.js";
import type {
  ClaimFilter,
  DefinitionBundle,
  NewRun,
  RunPatch,
  RunQuery,
  RunRecord,
  RunSummary,
  StoredSnapshot,
} from "../records.js";
import type { JournalRow, RunTranscriptRow } from "../step-entries.js";

/**
 * The run store's contract (`RunStore` in src/runtime/persistence.ts, and what `SqliteStore`
 * adds to it) with every call asynchronous, as a store across the network must be. Method for
 * method the same names, arguments, results and errors: expected conditions are error values,
 * a rejection is misuse or a failing store (`Session/StoreCorrupt`, `Session/StoreUnavailable`).
 * `PostgresStore` implements it, and `AsyncSqliteStore` wraps the embedded store in it, so the
 * runtime's port can move to it without changing what a run means.
 */
export interface AsyncRunStore {
  createRun(run: NewRun): Promise<Result<RunRecord>>;
  updateRun(runId: string, patch: RunPatch): Promise<Result<RunRecord>>;
  getRun(runId: string): Promise<Result<RunRecord>>;
  /** Newest first, as summaries (`getRun` has the rest): at most `limit`, only `status`. */
  listRuns(query?: RunQuery): Promise<RunSummary[]>;
  getSnapshot(runId: string): Promise<Result<StoredSnapshot>>;
  /**
   * The step's events with the run's next sequence numbers, its journal and transcript entries
   * and its snapshot, in one transaction: all of them are stored, or none.
   */
  commitStep(runId: string, step: StepCommit): Promise<AuditEvent[]>;
  auditOf(runId: string, afterSeq?: number): Promise<AuditEvent[]>;
  /** The seq of the run's last audit event; 0 before the first. */
  lastSeq(runId: string): Promise<number>;
  /** The run's committed steps, oldest first. */
  stepsOf(runId: string): Promise<StepRecord[]>;
  /** The snapshot the run had after step k (the last one committed up to k). */
  snapshotAtStep(runId: string, step: number): Promise<unknown>;
  /**
   * Creates `run` as a fork of `source` at `step`, in one transaction: its row, the journal and
   * transcript entries `source` had recorded by that step (under the new run's keys), and its
   * first step. `Session/ForkUnavailable` for a step with no record of what it had recorded.
   */
  forkRun(source: string, step: number, run: NewRun, first: StepCommit): Promise<Result<RunRecord>>;

  /** Stores a run for a worker to take, with status `queued`. */
  enqueueRun(run: Omit<NewRun, "status">): Promise<Result<RunRecord>>;
  /** Stores a definition's files by its hash; a hash already stored keeps its first bundle. */
  saveDefinition(hash: string, bundle: DefinitionBundle): Promise<void>;
  /** `Session/DefinitionNotFound` for a hash never saved. */
  loadDefinition(hash: string): Promise<Result<DefinitionBundle>>;
  /**
   * Cancels a run no worker took yet, its log one `RunCancelled` (`neverBegan`), in one
   * transaction; `Session/RunNotQueued` once a worker took it (or it never was queued).
   */
  cancelQueuedRun(runId: string, reason?: string): Promise<Result<RunRecord>>;
  /**
   * Atomically takes the oldest run whose definition is stored that is queued, or running under
   * an expired lease (its owner was killed): sets it running and gives `owner` its lease for
   * `ttlMs`. Concurrent claimers never get the same run; undefined when there is none.
   */
  claimRun(owner: string, ttlMs: number, only?: ClaimFilter): Promise<RunRecord | undefined>;
  /**
   * Gives a run back that `owner` stopped (a stopping worker's), in one transaction: the lease
   * `owner` holds is given up and the run, `running` or `suspended`, is queued for a worker to
   * take. False, changing nothing, once `owner` no longer holds the lease or for a run in any
   * other status (a run cancelled meanwhile stays cancelled).
   */
  requeueRun(runId: string, owner: string): Promise<boolean>;
  /**
   * Tells `onQueued` each time a run is queued (or queued again), where the store can (PostgreSQL:
   * `LISTEN/NOTIFY`), so an idle worker wakes at once instead of at its next poll.
   */
  watchQueue?(onQueued: () => void): Promise<Result<{ close(): Promise<void> }>>;
  /**
   * Runs whose steps the store lost where it can tell (SQLite: a WAL deleted or damaged after a
   * crash), each as `Session/StoreDamaged` naming the run, what it had and what is left.
   */
  lostSteps?(): Promise<StagechartError[]>;

  /** Journal: recorded model and tool results by idempotency key; the first value is kept. */
  get<T>(key: string, shape: z.core.$ZodType<T>): Promise<T | undefined>;
  record(key: string, value: unknown): Promise<void>;

  /** Transcripts: keyed entries per stage execution. */
  put(stageExecutionId: string, key: string, entry: TranscriptEntry): Promise<void>;
  read(stageExecutionId: string, before?: string): Promise<TranscriptEntry[]>;
  /** A stage execution's entries with their keys, in key order. */
  transcriptRows(stageExecutionId: string): Promise<TranscriptRow[]>;

  /**
   * The run's journal entries in the order they were recorded, each value as its JSON text
   * (`decodeJournalEntry` reads one back): what an owned run loads once instead of a read a call.
   */
  journalOf(runId: string): Promise<JournalRow[]>;
  /** The run's transcript entries, by stage execution then key. */
  transcriptsOf(runId: string): Promise<RunTranscriptRow[]>;

  /** What pipelines keep between runs. */
  recall(namespace: string, key: string): Promise<JsonValue | undefined>;
  remember(namespace: string, key: string, value: JsonValue): Promise<void>;
  recent(namespace: string, limit: number): Promise<MemoryEntry[]>;

  /**
   * Takes the run's lease if it is free, expired or already `owner`'s, or if `holderGone` says
   * its holder no longer exists; `Session/RunLocked` otherwise.
   */
  acquireLease(
    runId: string,
    owner: string,
    ttlMs: number,
    holderGone?: (holder: string) => boolean,
  ): Promise<Result<void>>;
  /** Extends a lease `owner` still holds; `Session/LeaseLost` once released or taken over. */
  renewLease(runId: string, owner: string, ttlMs: number): Promise<Result<void>>;
  /** Gives the lease up; a lease held by another owner is left alone. */
  releaseLease(runId: string, owner: string): Promise<void>;

  /** Control queue: events for a run's live owner (`Session/RunNotFound` for no such run). */
  enqueueControl(
    runId: string,
    request: { event: PipelineEvent; requester: Requester; timeoutMs: number },
  ): Promise<ControlRequest>;
  /** The run's pending and taken requests, oldest first (see `ControlQueue`). */
  pendingControls(runId: string): Promise<ControlRequest[]>;
  controlRequest(id: number): Promise<ControlRequest | undefined>;
  /** Marks a request taken by the run's owner, on the store's clock (see `ControlQueue`). */
  takeControl(id: number): Promise<boolean>;
  /** Settles (withdraws) a request still pending; false when taken or settled first. */
  settleControl(
    id: number,
    outcome: { status: Exclude<ControlStatus, "pending" | "taken">; error?: ErrorView },
  ): Promise<boolean>;
  /** The run's lease holder, while a lease row exists. */
  leaseHolder(
    runId: string,
  ): Promise<{ owner: string; expiresAt: number; expiresInMs: number } | undefined>;

  close(): Promise<void>;
}
