import { join } from "node:path";
import { SqliteStore } from "../../src/index.js";
import { type InterleavingPlan, spreadOf, timeInterleaved } from "../interleaved.js";
import { timeSideBySide } from "../measure.js";
import { meter } from "../metered-store.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

/** Runs a side times per round, so that a round's CPU time is not a few clock ticks. */
const RUNS_PER_ROUND = 5;
const CPU_PLAN: InterleavingPlan = { warmupRounds: 4, rounds: 21 };

/**
 * (b) The same run durable (SQLite, WAL, a commit per step) against in memory. Wall time follows
 * the machine's load (other processes take the cores); the CPU time this process spent, the
 * two sides alternating, much less: it is reported beside it (`cpuRatio`, with its quartiles).
 */
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
    const split = await storeTimeSplit(pipeline, workload, store);
    const runs = (durable?: SqliteStore) => async () => {
      for (let run = 0; run < RUNS_PER_ROUND; run++)
        await runToEnd(pipeline, hostFor(workload), durable);
    };
    const { cpuRatio } = await timeInterleaved(
      { baseline: { run: runs() }, candidate: { run: runs(store) } },
      CPU_PLAN,
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
        commitMsPerStep: split.commitMs / stepsPerRun,
        runStatusMsPerRun: split.statusMs,
        memoryRmePercent: memory.rme,
        durableRmePercent: durable.rme,
        cpuRatio: cpuRatio.median,
        cpuRatioP25: cpuRatio.p25,
        cpuRatioP75: cpuRatio.p75,
      },
      1.5,
    );
  } finally {
    store.close();
  }
}

/** Runs measured for the split of a durable run's store time. */
const SPLIT_RUNS = 60;

/**
 * Where a durable run's store time goes, per run (medians over 60 runs): its step commits, and
 * its status changes (`updateRun`: the last one, leaving `running`, checkpoints the WAL into the
 * main file, which syncs the disk).
 */
async function storeTimeSplit(
  pipeline: Awaited<ReturnType<typeof pipelineOf>>,
  workload: Workload,
  store: SqliteStore,
): Promise<{ commitMs: number; statusMs: number }> {
  let commitMs = 0;
  let statusMs = 0;
  const timed = <T>(work: () => T, add: (ms: number) => void): T => {
    const started = performance.now();
    try {
      return work();
    } finally {
      add(performance.now() - started);
    }
  };
  const watched = Object.assign(Object.create(store) as SqliteStore, {
    commitStep: (...args: Parameters<SqliteStore["commitStep"]>) =>
      timed(
        () => store.commitStep(...args),
        (ms) => {
          commitMs += ms;
        },
      ),
    updateRun: (...args: Parameters<SqliteStore["updateRun"]>) =>
      timed(
        () => store.updateRun(...args),
        (ms) => {
          statusMs += ms;
        },
      ),
  });
  const perRun = { commit: [] as number[], status: [] as number[] };
  for (let run = 0; run < SPLIT_RUNS; run++) {
    commitMs = 0;
    statusMs = 0;
    await runToEnd(pipeline, hostFor(workload), watched);
    perRun.commit.push(commitMs);
    perRun.status.push(statusMs);
  }
  return { commitMs: spreadOf(perRun.commit).median, statusMs: spreadOf(perRun.status).median };
}
