import { createScriptedModel } from "../../src/index.js";
import { bareMachine, runBare } from "../bare-xstate.js";
import { type InterleavingPlan, quartilesOf, timeInterleaved } from "../interleaved.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, lookupTool, pipelineOf, scriptOf, type Workload } from "../workload.js";
import { wholeReplies } from "./streaming.js";

/** Runs a side makes per round: a round is tens of milliseconds, not a few clock ticks. */
const RUNS_PER_ROUND = 20;
const PLAN: InterleavingPlan = { warmupRounds: 5, rounds: 41, collectGarbage: false };

/**
 * (a) An in-memory stagechart run against a bare XState machine doing the same turns, both
 * asking the model for whole replies (what streaming adds is the streaming row's). The two
 * alternate round by round (`timeInterleaved`), so both see the machine's load of the moment
 * (timed one after the other for seconds each, the ratio moved by a tenth from one bench run to
 * the next); the row is the median of the rounds' ratios, wall and CPU.
 */
export async function engineOverhead(workload: Workload): Promise<Comparison> {
  const pipeline = await pipelineOf(workload);
  const lookup = lookupTool(workload.outputBytes);
  // Each side set up once and run many times, as an app runs its runs: the bare machine defined
  // once, the stagechart host created once.
  const model = createScriptedModel(scriptOf(workload));
  const machine = bareMachine(model, lookup);
  const host = wholeReplies(hostFor(workload));
  const rounds = (run: () => Promise<unknown>) => async () => {
    for (let i = 0; i < RUNS_PER_ROUND; i++) await run();
  };
  const timing = await timeInterleaved(
    {
      baseline: {
        run: rounds(() => runBare(workload, model, lookup, machine)),
      },
      candidate: { run: rounds(() => runToEnd(pipeline, host)) },
    },
    PLAN,
  );
  const bareMs = timing.baselineMs.median / RUNS_PER_ROUND;
  const engineMs = timing.candidateMs.median / RUNS_PER_ROUND;
  const turns = workload.stages * workload.turns;
  const row = compare(
    `engine overhead: ${workload.stages} stages × ${workload.turns} turns, per run`,
    "ms",
    { label: "bare XState", value: bareMs },
    { label: "in memory", value: engineMs },
    {
      modelTurns: turns,
      bareMsPerTurn: bareMs / turns,
      stagechartMsPerTurn: engineMs / turns,
      rounds: timing.rounds,
      runsPerRound: RUNS_PER_ROUND,
      ratioQuartiles: quartilesOf(timing.ratio),
      cpuRatio: timing.cpuRatio.median,
      cpuRatioQuartiles: quartilesOf(timing.cpuRatio),
    },
    2,
  );
  return { ...row, ratio: timing.ratio.median };
}
