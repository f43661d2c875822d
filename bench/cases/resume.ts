import { join } from "node:path";
import {
  type PipelineDefinition,
  type RunHandle,
  resumeRun,
  SqliteStore,
  startRun,
} from "../../src/index.js";
import { timeSideBySide } from "../measure.js";
import { meter } from "../metered-store.js";
import { type Comparison, compare } from "../report.js";
import { nextRunId } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

/** Settles at the store's first step commit after it is armed. */
function firstCommit(store: SqliteStore) {
  let arrived = () => {};
  const committed = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  return { store: meter(store, () => arrived()).store, committed };
}

/** Stops a handle and waits for it to settle, so its lease is released before the next run. */
async function settle(handle: RunHandle | undefined): Promise<void> {
  if (!handle) return;
  handle.stop();
  await handle.result;
}

/**
 * (e) Time from the call to the first committed step: resuming a run parked mid-pipeline (read
 * the run and its snapshot, check the definition, restore the actors, answer the pending grant)
 * against starting the same pipeline fresh. The next model turn of both waits `pauseMs`, so
 * both are timed up to the same kind of moment.
 */
export async function resumeCost(workload: Workload, dir: string): Promise<Comparison> {
  const pipeline: PipelineDefinition = await pipelineOf(workload);
  const opened = SqliteStore.open(join(dir, "resume.db"));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  const suspendedRun = async (): Promise<{ runId: string; proposalId: string }> => {
    const runId = nextRunId("parked");
    const host = hostFor(workload, { unansweredGrants: "suspend" });
    const started = await startRun(pipeline, { host, store, runId, task: "benchmark the engine" });
    if (!started.ok) throw started.error;
    const parked = await started.value.result;
    const wait = parked.waiting?.[0];
    if (parked.status !== "suspended" || wait?.kind !== "grant") {
      throw new Error(`expected a run parked on a grant, got ${parked.status}`);
    }
    return { runId, proposalId: wait.proposalId };
  };

  let handle: RunHandle | undefined;
  let probe = firstCommit(store);
  let parked = { runId: "", proposalId: "" };
  let snapshotBytes = 0;
  try {
    const [fresh, resumed] = await timeSideBySide(
      {
        name: "start fresh",
        fn: async () => {
          const started = await startRun(pipeline, {
            host: hostFor(workload),
            store: probe.store,
            runId: nextRunId("fresh"),
            task: "benchmark the engine",
          });
          if (!started.ok) throw started.error;
          handle = started.value;
          await probe.committed;
        },
        hooks: {
          beforeEach: () => {
            probe = firstCommit(store);
          },
          afterEach: async () => {
            await settle(handle);
            handle = undefined;
          },
        },
      },
      {
        name: "resume from snapshot",
        fn: async () => {
          const resumed = await resumeRun(pipeline, parked.runId, {
            host: hostFor(workload),
            store: probe.store,
            answers: [{ proposalId: parked.proposalId, decision: "deny" }],
          });
          if (!resumed.ok) throw resumed.error;
          handle = resumed.value;
          await probe.committed;
        },
        hooks: {
          beforeEach: async () => {
            parked = await suspendedRun();
            const stored = store.getSnapshot(parked.runId);
            if (stored.ok) snapshotBytes = Buffer.byteLength(JSON.stringify(stored.value.snapshot));
            probe = firstCommit(store);
          },
          afterEach: async () => {
            await settle(handle);
            handle = undefined;
          },
        },
      },
      { time: 1000, iterations: 30 },
    );
    return compare(
      `resume: launch to first committed step (parked at stage ${(workload.probingStages?.[0] ?? 0) + 1} of ${workload.stages})`,
      "ms",
      { label: "start fresh", value: fresh.medianMs },
      { label: "resume", value: resumed.medianMs },
      {
        restoredSnapshotBytes: snapshotBytes,
        freshRmePercent: fresh.rme,
        resumeRmePercent: resumed.rme,
      },
    );
  } finally {
    store.close();
  }
}
