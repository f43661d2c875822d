import { type PipelineDefinition, type RunHandle, startRun } from "../../src/index.js";
import { settledHeap } from "../measure.js";
import { type Comparison, compare } from "../report.js";
import { nextRunId } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

const KIB = 1024;

/** Starts a run that parks on a grant request nobody answers, and waits till it suspends. */
async function suspendedRun(pipeline: PipelineDefinition, workload: Workload): Promise<RunHandle> {
  const started = await startRun(pipeline, {
    host: hostFor(workload, { unansweredGrants: "suspend" }),
    runId: nextRunId("suspended"),
    task: "benchmark the engine",
  });
  if (!started.ok) throw started.error;
  const result = await started.value.result;
  if (result.status !== "suspended") throw new Error(`run ended ${result.status}`);
  return started.value;
}

/** Heap per suspended run while `keep` of each run is held. */
async function heapPerSuspendedRun(
  pipeline: PipelineDefinition,
  workload: Workload,
  runs: number,
  keep: (handle: RunHandle) => unknown,
): Promise<number> {
  const before = await settledHeap();
  const kept: unknown[] = [];
  for (let i = 0; i < runs; i++) kept.push(keep(await suspendedRun(pipeline, workload)));
  const holding = await settledHeap();
  return (holding - before) / kept.length;
}

/**
 * (d) A suspended run (in memory, parked on a grant request at its first stage): heap held per
 * run by its handle, and by its result alone once the handle is dropped (≤ 50 KiB).
 */
export async function suspendedMemory(workload: Workload, runs: number): Promise<Comparison[]> {
  const parked = { ...workload, probingStages: [0] };
  const pipeline = await pipelineOf(parked);
  await suspendedRun(pipeline, parked);
  const handle = await heapPerSuspendedRun(pipeline, parked, runs, (kept) => kept);
  const result = await heapPerSuspendedRun(pipeline, parked, runs, (kept) => kept.result);
  return [
    compare(
      "memory: a suspended run once its handle is dropped (result kept), per run",
      "bytes",
      { label: "goal", value: 50 * KIB },
      { label: "held", value: result },
      undefined,
      1,
    ),
    compare(
      "memory: a suspended run whose handle is kept, per run",
      "bytes",
      { label: "goal", value: 50 * KIB },
      { label: "held", value: handle },
      undefined,
      1,
    ),
  ];
}
