import { join } from "node:path";
import { SqliteStore } from "../../src/index.js";
import { timeSideBySide } from "../measure.js";
import { meter } from "../metered-store.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

/** (b) The same run durable (SQLite, WAL, a commit per step) against in memory. */
export async function durabilityCost(workload: Workload, dir: string): Promise<Comparison> {
  const pipeline = await pipelineOf(workload);
  const opened = SqliteStore.open(join(dir, "durability.db"));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  try {
    const counted = meter(store);
    await runToEnd(pipeline, hostFor(workload), counted.store);
    const stepsPerRun = counted.commits;
    const [memory, durable] = await timeSideBySide(
      { name: "stagechart in memory", fn: () => runToEnd(pipeline, hostFor(workload)) },
      { name: "stagechart durable", fn: () => runToEnd(pipeline, hostFor(workload), store) },
    );
    return compare(
      `durability: ${workload.stages} stages × ${workload.turns} turns, per run`,
      "ms",
      { label: "in memory", value: memory.medianMs },
      { label: "SQLite WAL", value: durable.medianMs },
      {
        committedStepsPerRun: stepsPerRun,
        durableMsPerStep: durable.medianMs / stepsPerRun,
        addedMsPerStep: (durable.medianMs - memory.medianMs) / stepsPerRun,
        memoryRmePercent: memory.rme,
        durableRmePercent: durable.rme,
      },
      1.5,
    );
  } finally {
    store.close();
  }
}
