import type { z } from "zod";
import type { TranscriptEntry } from "../../compiler/stage-types.js";
import type { JsonValue } from "../../definitions/contract.js";
import type { MemoryEntry } from "../../definitions/memory.js";
import type { Result } from "../../errors.js";
import type { AuditEvent } from "../../inspect/audit.js";
import type { StepCommit } from "../../runtime/persistence.js";
import type { StepRecord } from "../history.js";
import type { NewRun, RunPatch, RunRecord, StoredSnapshot } from "../records.js";

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
  /** Newest first. */
  listRuns(): Promise<RunRecord[]>;
  getSnapshot(runId: string): Promise<Result<StoredSnapshot>>;
  /** The step's events with the run's next sequence numbers and its snapshot, in one transaction. */
  commitStep(runId: string, step: StepCommit): Promise<AuditEvent[]>;
  auditOf(runId: string, afterSeq?: number): Promise<AuditEvent[]>;
  /** The seq of the run's last audit event; 0 before the first. */
  lastSeq(runId: string): Promise<number>;
  /** The run's committed steps, oldest first. */
  stepsOf(runId: string): Promise<StepRecord[]>;
  /** The snapshot the run had after step k (the last one committed up to k). */
  snapshotAtStep(runId: string, step: number): Promise<unknown>;

  /** Journal: recorded model and tool results by idempotency key; the first value is kept. */
  get<T>(key: string, shape: z.ZodType<T>): Promise<T | undefined>;
  record(key: string, value: unknown): Promise<void>;

  /** Transcripts: keyed entries per stage execution. */
  put(stageExecutionId: string, key: string, entry: TranscriptEntry): Promise<void>;
  read(stageExecutionId: string, before?: string): Promise<TranscriptEntry[]>;

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

  close(): Promise<void>;
}
