import { loadBundle } from "../bundles/index.js";
import { err, ok, type Result, type StagechartError, toStagechartError } from "../errors.js";
import type { RunResult } from "../runtime/launch.js";
import { LEASE_TTL_MS } from "../runtime/lease-owner.js";
import type { RunStore } from "../runtime/store-port.js";
import { attachRunMcp, type HostSettings, storedRunHost } from "../runtime/stored-host.js";
import type { Tracing } from "../runtime/tracing/run-spans.js";
import {
  type PreparedRun,
  startWorkerPool,
  type WorkerPool,
} from "../store/postgres/worker-pool.js";

export interface WorkerOptions {
  /** The shared store (`PostgresStore`), or any `RunStore`. */
  store: RunStore;
  /** Runs driven at once (default 1). */
  concurrency?: number;
  /** The lease each run is held under, renewed while it runs (default 15 s). */
  leaseTtlMs?: number;
  /** How long an idle slot waits before it looks for a run again (default 500 ms). */
  pollMs?: number;
  /** How long `stop()` lets each run go on to store its step in flight (default 30 s). */
  stopGraceMs?: number;
  /** End once no run is waiting, rather than wait for more. */
  untilIdle?: boolean;
  /** Take only runs of these pipelines (by id, as a run records it; `pipelineIdsIn(dir)`). */
  pipelineIds?: readonly string[];
  /** Where stored definitions are written out to be loaded (default `definitionsCache()`). */
  cacheDir?: string;
  /** Where the spans of the runs it drives go (OpenTelemetry); none by default. */
  tracing?: Tracing;
  /** Told as each run starts and ends, or is refused. */
  onEvent?(event: WorkerEvent): void;
}

export type WorkerEvent =
  | { kind: "started"; runId: string }
  | { kind: "finished"; runId: string; outcome: RunResult }
  | { kind: "refused"; runId: string; error: StagechartError }
  | { kind: "warning"; message: string };

/** Default grace for a stopping worker's runs to store the step they are in. */
export const STOP_GRACE_MS = 30_000;

/**
 * The connections a worker's store keeps for `concurrency` runs at once: three a run — its step
 * writes, its lease renewal and its control poll each use one at a time and never overlap
 * themselves (an idle slot's claim takes the place of its run's; a claimed run being prepared
 * and opened reads one thing at a time beside its claim's renewal) — and one more for what runs
 * beside them (a code stage's pipeline memory). Its `LISTEN` holds a connection of its own.
 */
export const workerPoolSize = (concurrency: number): number => 3 * concurrency + 1;

/**
 * A worker: claims the store's queued runs (and runs whose owner's lease expired), loads each
 * one's stored definition (`loadDefinition` + `loadBundle`: no checkout needed), runs it under
 * its lease with the settings it was queued with, and claims the next. `stop()` stops claiming,
 * lets each run store its step in flight, and queues the runs it stopped again.
 */
export function runWorker(options: WorkerOptions): WorkerPool {
  const { store } = options;
  const leaseTtlMs = options.leaseTtlMs ?? LEASE_TTL_MS;
  const only = options.pipelineIds && { pipelineIds: options.pipelineIds };
  return startWorkerPool({
    store,
    claim: async (owner) => (await store.claimRun(owner, leaseTtlMs, only))?.runId,
    prepare: (runId, owner) => prepareRun(runId, owner, options),
    concurrency: options.concurrency ?? 1,
    idleMs: options.pollMs ?? 500,
    leaseTtlMs,
    stopGraceMs: options.stopGraceMs ?? STOP_GRACE_MS,
    ...(options.untilIdle && { untilIdle: true }),
    onStart: (runId) => options.onEvent?.({ kind: "started", runId }),
    onWarning: (message) => options.onEvent?.({ kind: "warning", message }),
    onRun: (runId, outcome) =>
      options.onEvent?.(
        "status" in outcome
          ? { kind: "finished", runId, outcome }
          : { kind: "refused", runId, error: outcome },
      ),
  });
}

/**
 * Failures of this worker's machine or of the store, not of the run: the run is given back for
 * another worker (or this one, later) rather than failed.
 */
const WORKER_FAULTS = new Set([
  "Session/DefinitionCacheUnavailable",
  "Session/StoreUnavailable",
  "Session/StoreConflict",
  "Session/PrepareFailed",
]);

/**
 * A claimed run's pipeline, exactly as it was queued, and its host from the settings stored
 * with it (never interactive: nobody is at a worker's terminal). A run that cannot be prepared
 * because of what it was queued with is failed with the reason, audited, so that no worker
 * takes it again; one this worker cannot prepare (`WORKER_FAULTS`) is left to the pool to give
 * back. Nothing thrown escapes: an unforeseen failure is `Session/PrepareFailed`.
 */
async function prepareRun(
  runId: string,
  owner: string,
  options: WorkerOptions,
): Promise<Result<PreparedRun>> {
  const { store } = options;
  const prepared = await (async () => {
    const run = await store.getRun(runId);
    if (!run.ok) return run;
    const settings = { ...(run.value.options as unknown as HostSettings), headless: true };
    return preparedFrom(run.value.definitionHash, settings, options);
  })().catch((error: unknown) => err(toStagechartError(error, "Session/PrepareFailed")));
  if (!prepared.ok && !WORKER_FAULTS.has(prepared.error.code))
    await failUnprepared(store, runId, owner, prepared.error);
  return prepared;
}

/** Ends a run that cannot be prepared: `RunFailed` with the error (under the claim's lease), then its status. */
async function failUnprepared(
  store: RunStore,
  runId: string,
  owner: string,
  error: StagechartError,
): Promise<void> {
  const payload = { status: "failed", error: error.toModelView() };
  await store.commitStep(runId, { events: [{ type: "RunFailed", runId, payload }], owner });
  await store.updateRun(runId, { status: "failed", error: error.toModelView() });
}

async function preparedFrom(
  hash: string,
  settings: HostSettings,
  options: WorkerOptions,
): Promise<Result<PreparedRun>> {
  const bundle = await options.store.loadDefinition(hash);
  if (!bundle.ok) return bundle;
  const warn = (message: string) => options.onEvent?.({ kind: "warning", message });
  const mcp = await attachRunMcp(settings.mcp, warn);
  if (!mcp.ok) return mcp;
  const tools = mcp.value.tools;
  const close = () => mcp.value.close();
  const pipeline = await loadBundle(hash, bundle.value, {
    ...(options.cacheDir !== undefined && { cacheDir: options.cacheDir }),
    mcpToolNames: tools.map((tool) => tool.name),
  });
  if (!pipeline.ok) {
    await close();
    return pipeline;
  }
  const host = await storedRunHost(settings, {
    extraTools: tools,
    ...(options.tracing && { tracing: options.tracing }),
  });
  if (!host.ok) {
    await close();
    return host;
  }
  return ok({ pipeline: pipeline.value, host: host.value, close });
}
