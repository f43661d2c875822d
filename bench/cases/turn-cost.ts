import { join } from "node:path";
import { SqliteStore } from "../../src/index.js";
import { quartilesOf, spreadOf } from "../interleaved.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

/** Turns taken at each end of the stage; the first five are left out as warm-up. */
const WINDOW = 50;
const SKIPPED = 5;
/** Timed runs of each kind, alternating in memory and durable, after one untimed run of each. */
const RUNS = 7;

const median = (values: readonly number[]): number => spreadOf(values).median;

const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

interface TurnTimes {
  /** Median CPU time of the process per turn, near the start and near the end. */
  early: number;
  late: number;
  /** The same in wall-clock time, which the machine's load moves far more. */
  earlyWall: number;
  lateWall: number;
}

/** Time per turn near the start and near the end of one run: the gaps between model calls. */
async function turnTimes(workload: Workload, store?: SqliteStore): Promise<TurnTimes> {
  const calls: { cpu: number; wall: number }[] = [];
  const host = hostFor(workload, {
    onModelCall: () => calls.push({ cpu: cpuMs(), wall: performance.now() }),
  });
  const pipeline = await pipelineOf(workload);
  globalThis.gc?.();
  await runToEnd(pipeline, host, store);
  const gaps = (of: "cpu" | "wall") =>
    calls.slice(1).map((call, i) => call[of] - (calls[i] as { cpu: number; wall: number })[of]);
  const ends = (values: number[]) => ({
    early: median(values.slice(SKIPPED, SKIPPED + WINDOW)),
    late: median(values.slice(-WINDOW)),
  });
  const cpu = ends(gaps("cpu"));
  const wall = ends(gaps("wall"));
  return { early: cpu.early, late: cpu.late, earlyWall: wall.early, lateWall: wall.late };
}

const quartiles = (values: readonly number[]): string => quartilesOf(spreadOf(values));

/**
 * (f) A single stage of `turns` turns: the CPU time a turn takes near its end against near its
 * start (medians of 50 turns), in memory and durable. Runs of the two kinds alternate; each
 * run gives its own ratio and the row is the median of them. Flat means the engine does the same
 * work per turn however long the transcript is.
 */
export async function turnCost(workload: Workload, dir: string): Promise<Comparison[]> {
  const opened = SqliteStore.open(join(dir, "turn-cost.db"));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  try {
    const kinds = [undefined, store];
    for (const kind of kinds) await turnTimes(workload, kind);
    const runs: TurnTimes[][] = [[], []];
    for (let round = 0; round < RUNS; round++)
      for (const [index, kind] of kinds.entries())
        runs[index]?.push(await turnTimes(workload, kind));
    return runs.map((times, index) => {
      const ratios = times.map((run) => run.late / run.early);
      const wallRatios = times.map((run) => run.lateWall / run.earlyWall);
      const row = compare(
        `time per turn, turn ${workload.turns} against turn 1 (${index === 0 ? "in memory" : "durable"}), CPU`,
        "ms",
        {
          label: `turns ${SKIPPED + 1}–${SKIPPED + WINDOW}`,
          value: median(times.map((t) => t.early)),
        },
        { label: `last ${WINDOW} turns`, value: median(times.map((t) => t.late)) },
        {
          runs: RUNS,
          ratioQuartiles: quartiles(ratios),
          wallRatioMedian: median(wallRatios),
          wallRatioQuartiles: quartiles(wallRatios),
        },
      );
      return { ...row, ratio: median(ratios) };
    });
  } finally {
    store.close();
  }
}
