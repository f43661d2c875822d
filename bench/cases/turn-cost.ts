import { join } from "node:path";
import { SqliteStore } from "../../src/index.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

/** Issue 14's goal: the last turn of a long stage within 1.2× the time of its first. */
const FLAT = 1.2;
/** Turns averaged at each end of the stage; the first few are left out as warm-up. */
const WINDOW = 50;
const RUNS = 3;

const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

/** Time per turn near the start and near the end of one run: the gaps between model calls. */
async function turnTimes(workload: Workload, store?: SqliteStore) {
  const calls: number[] = [];
  const host = hostFor(workload, { onModelCall: () => calls.push(performance.now()) });
  await runToEnd(await pipelineOf(workload), host, store);
  const gaps = calls.slice(1).map((at, i) => at - (calls[i] as number));
  return { early: median(gaps.slice(5, 5 + WINDOW)), late: median(gaps.slice(-WINDOW)) };
}

/**
 * (f) A single stage of `turns` turns: the time a turn takes near its end against near its
 * start (medians of 50 turns, the median of three runs), in memory and durable. Flat means the
 * engine does the same work per turn however long the transcript is.
 */
export async function turnCost(workload: Workload, dir: string): Promise<Comparison[]> {
  const opened = SqliteStore.open(join(dir, "turn-cost.db"));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  try {
    const rows: Comparison[] = [];
    for (const durable of [false, true]) {
      const runs = [];
      for (let i = 0; i < RUNS; i++)
        runs.push(await turnTimes(workload, durable ? store : undefined));
      const early = median(runs.map((run) => run.early));
      const late = median(runs.map((run) => run.late));
      rows.push(
        compare(
          `time per turn, turn ${workload.turns} against turn 1 (${durable ? "durable" : "in memory"})`,
          "ms",
          { label: "first turns", value: early },
          { label: `turns up to ${workload.turns}`, value: late },
          undefined,
          FLAT,
        ),
      );
    }
    return rows;
  } finally {
    store.close();
  }
}
