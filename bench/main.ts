import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { durabilityCost } from "./cases/durability.js";
import { diskFloor, durabilityFloor } from "./cases/durability-floor.js";
import { engineOverhead } from "./cases/engine-overhead.js";
import { inspectionOverhead } from "./cases/inspection.js";
import { langGraphSideBySide } from "./cases/langgraph.js";
import { mastraSideBySide } from "./cases/mastra.js";
import { memoryUse } from "./cases/memory.js";
import { postgresStepCost } from "./cases/postgres-steps.js";
import { resumeCost } from "./cases/resume.js";
import { runsListing } from "./cases/runs-listing.js";
import {
  compileScaling,
  durableGrowth,
  growthScaling,
  mapScaling,
  parallelScaling,
} from "./cases/scaling.js";
import { serveStarts } from "./cases/serve.js";
import { startUp } from "./cases/start-up.js";
import { storedRunOpening, storedRunOpeningScale } from "./cases/stored-run-open.js";
import { streamingCost } from "./cases/streaming.js";
import { suspendedMemory } from "./cases/suspended-memory.js";
import { transactionsPerStep } from "./cases/transactions.js";
import { turnCost } from "./cases/turn-cost.js";
import { workerFleet } from "./cases/workers.js";
import { writeAmplification } from "./cases/write-amplification.js";
import { judgeGoals, renderGoalTable } from "./goals.js";
import { refreshReadme } from "./readme.js";
import {
  type Comparison,
  describeMachine,
  renderDetails,
  renderTable,
  writeResults,
} from "./report.js";
import type { Workload } from "./workload.js";

/** Short chain, small outputs: the engine's own cost per turn dominates. */
const SHORT_RUN: Workload = { stages: 3, turns: 10, outputBytes: 200 };
/** Mastra's case: about 60 steps with kilobytes of tool output per turn. */
const LONG_RUN: Workload = { stages: 3, turns: 20, outputBytes: 5000 };
/** A short run of small outputs: what a run holds and writes besides the conversation shows. */
const SMALL_OUTPUTS_RUN: Workload = { stages: 3, turns: 10, outputBytes: 1000 };
/** Parked on a grant request at its third stage, with the next turns held for 20 ms. */
const PARKED_RUN: Workload = {
  stages: 4,
  turns: 10,
  outputBytes: 200,
  probingStages: [2],
  pauseMs: 20,
};
const MEMORY_RUNS = 20;
/** One stage of 2,000 turns: does a turn cost the same at the end as at the start? */
const LONG_STAGE: Workload = { stages: 1, turns: 2000, outputBytes: 200 };
/** Turns per stage of the LangGraph.js and Mastra comparisons. */
const PEER_TURNS = [10, 100];
/**
 * …and of their long rows, run apart (`npm run bench:peers-1000`): LangGraph.js's durable run of
 * 3 × 1,000 turns writes tens of gigabytes of checkpoints and Mastra's takes over a minute, so the
 * two rows alone take longer than every other row together.
 */
const LONG_PEER_TURNS = 1000;
/** Model turns per stage of the stored run the visualizer opens: about 1,000 audit events. */
const LONG_RUN_TURNS = 82;
/** …and of the run it is held against: about 110 audit events, as a run of a bundled pipeline. */
const SHORT_RUN_TURNS = 8;

/** The scaling goals: 1,000 siblings 16 at a time, a 1,000-stage chain, 10,000 runs. */
const WIDE_GROUP = { siblings: 1000, turns: 3, maxConcurrency: 16 };
const LONG_CHAIN_STAGES = 1000;
const STORED_RUNS = 10_000;

/** The shared-store figures: 300 queued runs with replies 150 ms late, 4 at a time per worker process. */
const WORKER_FLEET = { runs: 300, delayMs: 150, concurrency: 4 };

const RESULTS_DIR = join(process.cwd(), "bench", "results");

async function main(): Promise<void> {
  // `npm run bench -- --readme <results.json>`: the benchmarks page's tables from a committed baseline.
  // A second file (the long peer rows' baseline) adds the rows the first does not have.
  const readmeFrom = process.argv.indexOf("--readme");
  if (readmeFrom >= 0) {
    const files = process.argv.slice(readmeFrom + 1).filter((arg) => !arg.startsWith("--"));
    if (files.length === 0)
      throw new Error("--readme needs a results file, e.g. bench/results/baseline-<date>.json");
    console.log(refreshReadme(files, join(process.cwd(), "docs/benchmarks.md")));
    return;
  }
  const longPeers = process.argv.includes("--peers-1000");
  const machine = describeMachine();
  console.log(
    `stagechart benchmarks — ${machine.cpu} (${machine.cores} cores, ${machine.memoryGiB} GiB), Node ${machine.node}, ${machine.platform}\n`,
  );
  const dir = mkdtempSync(join(tmpdir(), "stagechart-bench-"));
  const comparisons: Comparison[] = [];
  // `npm run bench -- inspection "stored run"` runs only the cases whose names contain a word given.
  const only = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
  const step: Step = async (what, run) => {
    if (only.length > 0 && !only.some((word) => what.includes(word))) return;
    process.stderr.write(`running ${what}…\n`);
    const measured = await run();
    if (measured) comparisons.push(...[measured].flat());
    else
      process.stderr.write(
        `  ${what}: skipped (what it needs is missing: chromium and the built page, or a PostgreSQL server)\n`,
      );
  };
  try {
    if (longPeers) {
      await step(`LangGraph.js, ${LONG_PEER_TURNS} turns`, () =>
        langGraphSideBySide(LONG_PEER_TURNS, dir),
      );
      await step(`Mastra, ${LONG_PEER_TURNS} turns`, () => mastraSideBySide(LONG_PEER_TURNS, dir));
    } else await allRows(step, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // Rows re-measured alone (named) are a results file of their own only when asked for a baseline.
  const suffix = longPeers ? "-peers-1000" : only.length > 0 ? "-rows" : "";
  report(comparisons, only.length > 0 && !process.argv.includes("--baseline"), suffix, machine);
}

type Step = (
  what: string,
  run: () => Promise<Comparison | Comparison[] | undefined>,
) => Promise<void>;

/** Every row but the long peer rows, in the order the page lists them. */
async function allRows(step: Step, dir: string): Promise<void> {
  await step("engine overhead", () => engineOverhead(SHORT_RUN));
  await step("streaming", () => streamingCost(SHORT_RUN));
  for (const turns of PEER_TURNS)
    await step(`LangGraph.js, ${turns} turns`, () => langGraphSideBySide(turns, dir));
  for (const turns of PEER_TURNS)
    await step(`Mastra, ${turns} turns`, () => mastraSideBySide(turns, dir));
  await step("durability", () => durabilityCost(SHORT_RUN, dir));
  await step("durability floor", () => durabilityFloor(SHORT_RUN, dir));
  await step("transactions per step", () => transactionsPerStep(SHORT_RUN, dir));
  await step("transactions per step on PostgreSQL", () => postgresStepCost(SHORT_RUN, dir));
  await step("time per turn", () => turnCost(LONG_STAGE, dir));
  await step("write amplification", () => writeAmplification(LONG_RUN, dir));
  await step("write amplification, 1 kB outputs", () => writeAmplification(SMALL_OUTPUTS_RUN, dir));
  await step("disk floor", () => diskFloor(LONG_RUN, dir));
  await step("disk floor, 1 kB outputs", () => diskFloor(SMALL_OUTPUTS_RUN, dir));
  await step("memory", () => memoryUse(LONG_RUN, MEMORY_RUNS));
  await step("memory, 1 kB outputs", () => memoryUse(SMALL_OUTPUTS_RUN, MEMORY_RUNS));
  await step("suspended memory", () => suspendedMemory(SHORT_RUN, MEMORY_RUNS));
  await step("resume", () => resumeCost(PARKED_RUN, dir));
  await step("inspection", () => inspectionOverhead(SHORT_RUN, dir));
  await step("opening a stored run", () => storedRunOpening(dir, LONG_RUN_TURNS));
  await step("opening a stored run as it grows", () =>
    storedRunOpeningScale(dir, SHORT_RUN_TURNS, LONG_RUN_TURNS),
  );
  await step("parallel group", () => parallelScaling(WIDE_GROUP));
  await step("map group", () => mapScaling(WIDE_GROUP));
  await step("growth to 5,000 stages", () => growthScaling());
  await step("durable growth to 5,000 stages", () => durableGrowth(dir));
  await step("compiling", () => compileScaling(LONG_CHAIN_STAGES));
  await step("start-up", async () => startUp());
  await step("runs listing", () => runsListing(dir, STORED_RUNS));
  await step("workers", () => workerFleet(WORKER_FLEET));
  await step("serve: starting 100 runs", () => serveStarts(dir));
}

/** Prints the rows and the goals they judge; an unfiltered run also writes them to bench/results/. */
function report(
  comparisons: Comparison[],
  filtered: boolean,
  suffix: string,
  machine: ReturnType<typeof describeMachine>,
): void {
  const goals = judgeGoals(comparisons);
  console.log(renderTable(comparisons));
  console.log(`\n${renderDetails(comparisons)}`);
  const measured = filtered || suffix ? goals.filter((g) => g.verdict !== "not measured") : goals;
  console.log(`\n${renderGoalTable(measured)}`);
  if (filtered) return;
  writeResults(join(RESULTS_DIR, `latest${suffix}.json`), machine, comparisons, goals);
  if (process.argv.includes("--baseline")) {
    const day = new Date().toISOString().slice(0, 10);
    writeResults(join(RESULTS_DIR, `baseline-${day}${suffix}.json`), machine, comparisons, goals);
  }
}

await main();
