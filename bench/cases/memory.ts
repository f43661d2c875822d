import { createScriptedModel } from "../../src/index.js";
import { runBare } from "../bare-xstate.js";
import { settledHeap } from "../measure.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, lookupTool, pipelineOf, scriptOf, type Workload } from "../workload.js";

/**
 * Heap a batch of finished runs holds while their caller keeps them, and heap left behind once
 * they are let go, per run. Bare XState keeps its transcripts in the final context; a stagechart
 * run's result keeps its stages' results, and its host's audit log its events.
 */
async function heapPerRun(runs: number, runOne: () => Promise<unknown>) {
  const before = await settledHeap();
  const held = await heapHeldBy(runs, runOne, before);
  // Measured once the batch's frame is gone, so nothing of it can still be on a stack.
  const leftBehind = ((await settledHeap()) - before) / runs;
  return { held, leftBehind };
}

async function heapHeldBy(
  runs: number,
  runOne: () => Promise<unknown>,
  before: number,
): Promise<number> {
  const kept: unknown[] = [];
  for (let i = 0; i < runs; i++) kept.push(await runOne());
  const holding = await settledHeap();
  // Read after the measurement, so the runs are certainly still reachable while it is taken.
  return (holding - before) / kept.length;
}

/** (d) Memory: K finished runs on stagechart (in memory) against K on bare XState. */
export async function memoryUse(workload: Workload, runs: number): Promise<Comparison[]> {
  const pipeline = await pipelineOf(workload);
  const lookup = lookupTool(workload.outputBytes);
  // One warm-up run each, so code compiled on first use is not counted as run memory.
  await runBare(workload, createScriptedModel(scriptOf(workload)), lookup);
  await runToEnd(pipeline, hostFor(workload));
  const bare = await heapPerRun(runs, () =>
    runBare(workload, createScriptedModel(scriptOf(workload)), lookup),
  );
  // One host for the batch, as an app runs its runs: what a run adds to it (its audit events in
  // the host's log) is counted with the run; the host itself and the machine its runs share are
  // made before the first measurement.
  const host = hostFor(workload);
  await runToEnd(pipeline, host);
  const engine = await heapPerRun(runs, () => runToEnd(pipeline, host));
  const label = `${workload.stages}×${workload.turns} turns, ${workload.outputBytes} B outputs`;
  return [
    compare(
      `memory: heap held per finished run (${label}, ${runs} runs)`,
      "bytes",
      { label: "bare XState", value: bare.held },
      { label: "in memory", value: engine.held },
      undefined,
      2,
    ),
    compare(
      `memory: heap still in use per run once released (${label})`,
      "bytes",
      { label: "bare XState", value: bare.leftBehind },
      { label: "in memory", value: engine.leftBehind },
    ),
  ];
}
