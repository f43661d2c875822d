import type { PipelineDefinition } from "../../definitions/pipeline-types.js";
import { type Result, type StagechartError, toStagechartError } from "../../errors.js";
import type { Host } from "../../runtime/host.js";
import type { RunHandle, RunResult } from "../../runtime/launch.js";
import { leaseOwner } from "../../runtime/persistence.js";
import type { AsyncRunStore } from "./async-run-store.js";
import { resumeSharedRun } from "./shared-runs.js";

export interface WorkerPoolOptions {
  store: AsyncRunStore;
  /**
   * Takes the next run waiting to be driven and leases it to `owner` in the same transaction
   * (the store's claim query); undefined when none waits.
   */
  claim(owner: string): Promise<string | undefined>;
  /**
   * What a claimed run runs with: its pipeline (the definition it was started with), its host,
   * and what to close once the run is over (its MCP servers).
   */
  prepare(runId: string): Promise<Result<PreparedRun>>;
  /** Runs driven at once (default 1). */
  concurrency?: number;
  /** How long an idle slot waits before it claims again (default 500 ms). */
  idleMs?: number;
  leaseTtlMs?: number;
  /** A slot that finds no run to claim ends, instead of waiting for one (a draining worker). */
  untilIdle?: boolean;
  /**
   * How long `stop()` lets each run go on to its next stored step before stopping it (default
   * 0: at once).
   */
  stopGraceMs?: number;
  /** Told when a claimed run starts being driven. */
  onStart?(runId: string): void;
  /** Told how each run it drove ended, or why it could not drive it. */
  onRun?(runId: string, outcome: RunResult | StagechartError): void;
}

export interface PreparedRun {
  pipeline: PipelineDefinition;
  host: Host;
  close?(): Promise<void>;
}

export interface WorkerPool {
  /**
   * Stops claiming and stops the runs under way, each once it has stored its next step (or the
   * grace has passed): each keeps its stored steps, its lease is given up and it is queued
   * again, for this or another worker to take. Resolves once every slot has finished.
   */
  stop(): Promise<void>;
  /** Settles once every slot has finished: after `stop()`, or once idle with `untilIdle`. */
  readonly done: Promise<void>;
}

/** A run being driven, and a way to stop it once it has taken its next step. */
interface LiveRun {
  handle: RunHandle;
  stopAfterNextStep(graceMs: number): void;
}

/**
 * `concurrency` slots, each claiming a run, driving it to its end (or suspension) on the shared
 * store with `resumeSharedRun` under the owner it was claimed with, then claiming the next.
 */
export function startWorkerPool(options: WorkerPoolOptions): WorkerPool {
  const live = new Set<LiveRun>();
  const sleeping = new Set<() => void>();
  const graceMs = options.stopGraceMs ?? 0;
  let stopping = false;
  const idle = () =>
    new Promise<void>((resume) => {
      const wake = () => {
        clearTimeout(timer);
        sleeping.delete(wake);
        resume();
      };
      const timer = setTimeout(wake, options.idleMs ?? 500);
      sleeping.add(wake);
    });

  const drive = async (runId: string, owner: string): Promise<RunResult | StagechartError> => {
    const prepared = await options.prepare(runId);
    if (!prepared.ok) {
      await options.store.releaseLease(runId, owner);
      return prepared.error;
    }
    const { pipeline, host, close } = prepared.value;
    const { store, leaseTtlMs } = options;
    try {
      const launched = await resumeSharedRun(pipeline, runId, { host, store, owner, leaseTtlMs });
      if (!launched.ok) return launched.error;
      return await driveLaunched(runId, launched.value);
    } finally {
      await close?.();
    }
  };

  const driveLaunched = async (runId: string, handle: RunHandle) => {
    const { store } = options;
    options.onStart?.(runId);
    const run = liveRun(handle);
    live.add(run);
    if (stopping) run.stopAfterNextStep(graceMs);
    try {
      const outcome = await handle.result;
      // Stopped by this pool, not parked on a gate nor by a failure: another worker takes it on.
      if (stopping && outcome.status === "suspended" && !outcome.waiting && !outcome.error)
        await store.requeueRun(runId);
      return outcome;
    } finally {
      live.delete(run);
    }
  };

  // A store that fails under a claim or a launch is waited out: the slot tries again later.
  const slot = async () => {
    while (!stopping) {
      const owner = leaseOwner();
      const runId = await options.claim(owner).catch(() => undefined);
      if (runId === undefined) {
        if (options.untilIdle) return;
        await idle();
        continue;
      }
      const outcome = await drive(runId, owner).catch((error: unknown) =>
        toStagechartError(error, "Session/StoreUnavailable"),
      );
      options.onRun?.(runId, outcome);
    }
  };

  const done = Promise.all(Array.from({ length: options.concurrency ?? 1 }, slot)).then(() => {});
  return {
    done,
    async stop() {
      stopping = true;
      for (const wake of sleeping) wake();
      for (const run of live) run.stopAfterNextStep(graceMs);
      await done;
    },
  };
}

/**
 * Watches the run's events so that a stop can wait for the next one: an event is a step taken
 * (a model reply, a tool result, a stage entered or left), which the run stores before it stops.
 */
function liveRun(handle: RunHandle): LiveRun {
  let seen = 0;
  let onEvent = () => {};
  void (async () => {
    for await (const _ of handle.events()) {
      seen++;
      onEvent();
    }
  })();
  let stopRequested = false;
  return {
    handle,
    stopAfterNextStep(graceMs) {
      if (stopRequested) return;
      stopRequested = true;
      if (graceMs <= 0) return handle.stop();
      const before = seen;
      const stop = () => {
        clearTimeout(timer);
        onEvent = () => {};
        // After the step's own settling (a microtask) has handed it to the store.
        setImmediate(() => handle.stop());
      };
      const timer = setTimeout(stop, graceMs);
      onEvent = () => {
        if (seen > before) stop();
      };
    },
  };
}
