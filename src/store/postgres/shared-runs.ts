import { randomUUID } from "node:crypto";
import type { PipelineDefinition } from "../../definitions/pipeline-types.js";
import { err, ok, type Result } from "../../errors.js";
import { withResult } from "../../runtime/durable.js";
import { type ReopenOptions, reopenRun } from "../../runtime/reopen.js";
import {
  type ResumeOptions,
  type RunHandle,
  type RunOptions,
  resumeRun,
  startRun,
} from "../../runtime/run.js";
import type { RunStore } from "../../runtime/store-port.js";
import { OwnedRun } from "./owned-run.js";

/** `startRun`'s options, with the run kept in an asynchronous store (`PostgresStore`). */
export type SharedRunOptions = Omit<RunOptions, "store"> & { store: RunStore };

/** `resumeRun`'s options, with the run kept in an asynchronous store (`PostgresStore`). */
export type SharedResumeOptions = Omit<ResumeOptions, "store"> & {
  store: RunStore;
  /** The lease owner a worker claimed the run under (a new one when not given). */
  owner?: string;
};

/**
 * `startRun` on a shared store: the same run with the same guarantees (every step one
 * transaction, no model or tool call before the steps that led to it are stored, one live owner),
 * through an `OwnedRun` of the run. The handle's result settles once every write is stored; one
 * that failed leaves the run `suspended` with the store's error, resumable from its last stored
 * step.
 */
export async function startSharedRun(
  pipeline: PipelineDefinition,
  options: SharedRunOptions,
): Promise<Result<RunHandle>> {
  const runId = options.runId ?? `run-${randomUUID().slice(0, 8)}`;
  const owned = await OwnedRun.open(options.store, runId, options);
  if (!owned.ok) return owned;
  return settled(owned.value, startRun(pipeline, { ...options, runId, store: owned.value }));
}

/** `resumeRun` on a shared store, as `startSharedRun` starts one. */
export async function resumeSharedRun(
  pipeline: PipelineDefinition,
  runId: string,
  options: SharedResumeOptions,
): Promise<Result<RunHandle>> {
  const owned = await OwnedRun.open(options.store, runId, options);
  if (!owned.ok) return owned;
  return settled(owned.value, resumeRun(pipeline, runId, { ...options, store: owned.value }));
}

/** `reopenRun` (a redo of a run that ended done) on a shared store, as `startSharedRun` starts one. */
export async function reopenSharedRun(
  pipeline: PipelineDefinition,
  runId: string,
  options: Omit<ReopenOptions, "store"> & { store: RunStore },
): Promise<Result<RunHandle>> {
  const owned = await OwnedRun.open(options.store, runId, options);
  if (!owned.ok) return owned;
  return settled(owned.value, reopenRun(pipeline, runId, { ...options, store: owned.value }));
}

/**
 * The launch, returned once what it wrote so far is stored, its result settling once all the
 * run's writes are stored and its lease given up (a failed write is the handle's to report). A
 * launch refused is reported once what it audited is stored, or as the store's failure.
 */
async function settled(owned: OwnedRun, launched: Result<RunHandle>): Promise<Result<RunHandle>> {
  if (!launched.ok) {
    const failure = await owned.close();
    return failure ? err(failure) : launched;
  }
  // Its row and lease are stored before the launch returns: other processes see it live.
  await owned.durable().catch(() => {});
  const result = launched.value.result.then(async (outcome) => {
    const failure = await owned.close();
    if (!failure) return outcome;
    return { ...outcome, status: "suspended" as const, error: failure.toModelView() };
  });
  return ok(withResult(launched.value, result));
}
