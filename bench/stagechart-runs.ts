import type { InspectionEvent, Observer } from "xstate";
import type { Host, PipelineDefinition, RunResult, RunStore } from "../src/index.js";
import { startRun } from "../src/index.js";

let runCount = 0;

/** A run id no earlier run of this process used, so runs can share one store. */
export const nextRunId = (prefix: string): string => `${prefix}-${++runCount}`;

/** Runs the pipeline to its end, in memory or (with `store`) durably, inspected or not. */
export async function runToEnd(
  pipeline: PipelineDefinition,
  host: Host,
  store?: RunStore,
  inspect?: Observer<InspectionEvent>,
): Promise<RunResult> {
  const started = await startRun(pipeline, {
    host,
    runId: nextRunId("bench"),
    task: "benchmark the engine",
    ...(store && { store }),
    ...(inspect && { inspect }),
  });
  if (!started.ok) throw started.error;
  const result = await started.value.result;
  if (result.status !== "done") throw new Error(`run ended ${result.status}`);
  return result;
}
