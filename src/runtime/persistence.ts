import type { TranscriptEntry } from "../compiler/stage-types.js";
import type { JsonValue } from "../definitions/contract.js";
import type { PipelineMemory } from "../definitions/memory.js";
import { type ErrorView, type Result, type StagechartError, toStagechartError } from "../errors.js";
import type { AuditEvent, AuditEventInput } from "../events/audit.js";
import type { Journal } from "./journal.js";
import type { ControlQueue, ControlSettlement } from "./live-control.js";
import type { StoredStatus } from "./run-records.js";
import type { TranscriptRow, TranscriptStore } from "./transcripts.js";

/**
 * One step of a durable run, stored in one transaction: its snapshot, the audit events it
 * emitted, and the journal entries and transcript entries its calls and actions wrote.
 */
export interface StepCommit {
  snapshot?: unknown;
  /** Stamped on the snapshot; the run's own hash when absent. */
  definitionHash?: string;
  /**
   * Each stamped with the commit's time unless it carries the moment it happened (`at`); the
   * store numbers them (an event that carries the number it gives is kept as it is).
   */
  events: (AuditEventInput & { at?: string; seq?: number })[];
  journal?: { key: string; value: unknown }[];
  transcripts?: { stageExecutionId: string; key: string; entry: TranscriptEntry }[];
  /**
   * The control requests the step applies or refuses, settled in its transaction: until it is
   * stored they stay pending, for whoever owns the run next. One that is no longer pending (its
   * requester withdrew it meanwhile) fails the step: `Session/ControlExpired`, nothing stored.
   */
  controls?: ControlSettlement[];
  /**
   * The lease holder the step is written under: a store shared between processes refuses the
   * step (`Session/LeaseLost`, nothing stored) when the run's lease is another's.
   */
  owner?: string;
}

/**
 * A run's journal as recorded (a key's first value), and its transcripts. A journal that does not
 * read back fails the whole read (`Session/StoreCorrupt`): a run that went on without knowing
 * which calls it recorded would make them again.
 */
export interface RunEntries {
  journal: { key: string; value: string }[];
  /**
   * A stage execution's transcript entries in key order, decoded when asked: a damaged entry
   * fails the reads of its own stage execution only (a step's transcripts that do not read back
   * at all, those of every stage execution). A reader must read a stage execution's transcript
   * before it puts into it: a store may answer none for a stage execution of which no entry was
   * stored when the first transcript was asked for.
   */
  transcriptRows(stageExecutionId: string): TranscriptRow[];
}

/**
 * What durable runs need from a store (the SQLite store implements it; another backend can).
 * Transcripts and the journal live in it too, so a resumed run finds every recorded result; and
 * what pipelines keep between runs (`PipelineMemory`), which its durable runs' code stages use.
 */
export interface StepStore extends Journal, TranscriptStore, PipelineMemory, ControlQueue {
  createRun(run: {
    runId: string;
    pipelineId: string;
    definitionHash: string;
    options: Record<string, unknown>;
  }): Result<unknown>;
  /** With `releasing`, the lease that owner holds is given up with the change (a run's end). */
  updateRun(
    runId: string,
    patch: { status?: StoredStatus; error?: ErrorView; output?: JsonValue },
    releasing?: string,
  ): Result<unknown>;
  getRun(runId: string): Result<{
    runId: string;
    pipelineId: string;
    status: StoredStatus;
    /** The pipeline's hash when the run was created. */
    definitionHash: string;
    options: Record<string, unknown>;
  }>;
  getSnapshot(runId: string): Result<{ snapshot: unknown; definitionHash: string }>;
  /**
   * The run's journal entries (values as their JSON text) and transcript entries, at once: what
   * a durable run reads back, once, instead of a read per call.
   */
  entriesOf(runId: string): RunEntries;
  commitStep(runId: string, step: StepCommit): AuditEvent[];
  auditOf(runId: string, afterSeq?: number): AuditEvent[];
  /** The seq of the run's last audit event; 0 before the first. */
  lastSeq(runId: string): number;
  /**
   * Takes the run's lease if it is free, expired or already `owner`'s, or if `holderGone` says
   * its holder no longer exists; `Session/RunLocked` otherwise.
   */
  acquireLease(
    runId: string,
    owner: string,
    ttlMs: number,
    holderGone?: (holder: string) => boolean,
  ): Result<void>;
  renewLease(runId: string, owner: string, ttlMs: number): Result<void>;
  releaseLease(runId: string, owner: string): void;
}

/**
 * The journal and transcripts of a durable run as its stages see them. A store that fails under
 * a call — a damaged row, a full disk — is not the stage's failure: `stopRun` is told first, so
 * the run stops where it is (and stays resumable), then the call throws the store's error.
 */
export function stopOnStoreFailure(
  store: Journal & TranscriptStore,
  stopRun: (error: StagechartError) => void,
): Journal & TranscriptStore {
  const fail = (error: unknown): never => {
    const failure = toStagechartError(error, "Session/StoreUnavailable");
    stopRun(failure);
    throw failure;
  };
  const guarded = <T>(work: () => T): T => {
    try {
      return work();
    } catch (error) {
      return fail(error);
    }
  };
  const { durable } = store;
  return {
    ...(durable && { durable: () => durable.call(store).catch(fail) }),
    get: (key, shape) => guarded(() => store.get(key, shape)),
    record: (key, value) => guarded(() => store.record(key, value)),
    put: (stageExecutionId, key, entry) => guarded(() => store.put(stageExecutionId, key, entry)),
    read: (stageExecutionId, before) => guarded(() => store.read(stageExecutionId, before)),
  };
}
