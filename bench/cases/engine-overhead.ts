import { createScriptedModel } from "../../src/index.js";
import { runBare } from "../bare-xstate.js";
import { timeSideBySide } from "../measure.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, lookupTool, pipelineOf, scriptOf, type Workload } from "../workload.js";

/** (a) An in-memory stagechart run against a bare XState machine doing the same turns. */
export async function engineOverhead(workload: Workload): Promise<Comparison> {
  const pipeline = await pipelineOf(workload);
  const lookup = lookupTool(workload.outputBytes);
  const [bare, engine] = await timeSideBySide(
    {
      name: "bare XState",
      fn: () => runBare(workload, createScriptedModel(scriptOf(workload)), lookup),
    },
    { name: "stagechart in memory", fn: () => runToEnd(pipeline, hostFor(workload)) },
  );
  const turns = workload.stages * workload.turns;
  return compare(
    `engine overhead: ${workload.stages} stages × ${workload.turns} turns, per run`,
    "ms",
    { label: "bare XState", value: bare.medianMs },
    { label: "in memory", value: engine.medianMs },
    {
      modelTurns: turns,
      bareMsPerTurn: bare.medianMs / turns,
      stagechartMsPerTurn: engine.medianMs / turns,
      bareRmePercent: bare.rme,
      stagechartRmePercent: engine.rme,
      bareSamples: bare.samples,
      stagechartSamples: engine.samples,
    },
    2,
  );
}
