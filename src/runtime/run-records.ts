import type { JsonValue } from "../definitions/json.js";
import type { ErrorView } from "../errors.js";

/*
 * What a store keeps of each run, as the store port answers it. Free of Node's modules, since
 * the visualizer's page reads these types too.
 */

/** `queued`: stored to be run by a worker (`run --detach`), not started yet. */
export type StoredStatus = "queued" | "running" | "suspended" | "done" | "failed" | "cancelled";

/** A run's state as stored; `suspended` is a run parked on a gate or stopped to be resumed. */
export interface RunRecord {
  runId: string;
  pipelineId: string;
  status: StoredStatus;
  createdAt: string;
  updatedAt: string;
  /** The hash of the compiled definition the run was started (or last forced) with. */
  definitionHash: string;
  stagechartVersion: string;
  /** What resuming needs: the pipeline file, the model spec, the root, the mode… */
  options: Record<string, unknown>;
  error?: ErrorView;
  output?: JsonValue;
  /**
   * When a suspended run's earliest wait times out (an ask's or a grant request's deadline): a
   * worker takes it then, and its resume applies the timeout's fallback.
   */
  wakeAt?: string;
}

/** A run as `runs` lists it: what tells runs apart, without what resuming one needs. */
export type RunSummary = Pick<
  RunRecord,
  "runId" | "pipelineId" | "status" | "createdAt" | "updatedAt"
>;

/**
 * Which runs to list: at most `limit` (default all), only those with `status`, only those last
 * updated (a step included) after the timestamp `updatedSince`.
 */
export interface RunQuery {
  limit?: number;
  status?: StoredStatus;
  updatedSince?: string;
}

export interface NewRun {
  /** Must not contain `/`: journal and transcript rows find their run by the id's prefix. */
  runId: string;
  pipelineId: string;
  definitionHash: string;
  options: Record<string, unknown>;
  /** Defaults to `running`. */
  status?: StoredStatus;
}

/** Which queued runs a worker takes: only those of these pipelines (by id) when given. */
export interface ClaimFilter {
  pipelineIds?: readonly string[];
}

/**
 * A pipeline's definition as files: `entry`, the pipeline file or folder to load, and
 * every file it uses, by path relative to the bundle's root, with its text. Stored by the
 * definition hash of what they load into, so a worker runs exactly what the run was queued with.
 */
export interface DefinitionBundle {
  entry: string;
  files: Record<string, string>;
}

/**
 * Fields to change; a field present with the value `undefined` clears `error` or `output`. A
 * patch that sets the status without `wakeAt` clears it: only a suspended run waits to wake.
 */
export type RunPatch = Partial<
  Pick<RunRecord, "status" | "definitionHash" | "options" | "error" | "output" | "wakeAt">
>;

export interface StoredSnapshot {
  snapshot: unknown;
  definitionHash: string;
  stagechartVersion: string;
  updatedAt: string;
}

/** One committed step of a run, as the step history keeps it. */
export interface StepRecord {
  step: number;
  /** The last audit event the step added (the previous step's when it added none). */
  lastSeq: number;
  at: string;
}
