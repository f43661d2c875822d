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
  /** What a claimed run runs with: its pipeline (the definition it was started with) and host. */
  prepare(runId: string): Promise<Result<{ pipeline: PipelineDefinition; host: Host }>>;
  /** Runs driven at once (default 1). */
  concurrency?: number;
  /** How long an idle slot waits before it claims again (default 500 ms). */
  idleMs?: number;
  leaseTtlMs?: number;
  /** Told how each run it drove ended, or why it could not drive it. */
  onRun?(runId: string, outcome: RunResult | StagechartError): void;
}

export interface WorkerPool {
  /**
   * Stops claiming and stops the runs under way: each keeps its last stored step, is left
   * `suspended` and its lease given up, for this or another worker to resume. Resolves once
   * every slot has finished.
   */
  stop(): Promise<void>;
}

/**
 * `concurrency` slots, each claiming a run, driving it to its end (or suspension) on the shared
 * store with `resumeSharedRun` under the owner it was claimed with, then claiming the next.
 */
export function startWorkerPool(options: WorkerPoolOptions): WorkerPool {
  const live = new Set<RunHandle>();
  const sleeping = new Set<() => void>();
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
    const { pipeline, host } = prepared.value;
    const { store, leaseTtlMs } = options;
    const launched = await resumeSharedRun(pipeline, runId, { host, store, owner, leaseTtlMs });
    if (!launched.ok) return launched.error;
    live.add(launched.value);
    if (stopping) launched.value.stop();
    try {
      return await launched.value.result;
    } finally {
      live.delete(launched.value);
    }
  };

  // A store that fails under a claim or a launch is waited out: the slot tries again later.
  const slot = async () => {
    while (!stopping) {
      const owner = leaseOwner();
      const runId = await options.claim(owner).catch(() => undefined);
      if (runId === undefined) {
        await idle();
        continue;
      }
      const outcome = await drive(runId, owner).catch((error: unknown) =>
        toStagechartError(error, "Session/StoreUnavailable"),
      );
      options.onRun?.(runId, outcome);
    }
  };

  const slots = Array.from({ length: options.concurrency ?? 1 }, slot);
  return {
    async stop() {
      stopping = true;
      for (const wake of sleeping) wake();
      for (const handle of live) handle.stop();
      await Promise.all(slots);
    },
  };
}
