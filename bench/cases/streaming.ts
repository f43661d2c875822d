import type { Host } from "../../src/index.js";
import { startRun } from "../../src/index.js";
import { streamOf } from "../../src/models/reply-stream.js";
import { type InterleavingPlan, quartilesOf, timeInterleaved } from "../interleaved.js";
import { type Comparison, compare } from "../report.js";
import { nextRunId } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

const RUNS_PER_ROUND = 20;
const PLAN: InterleavingPlan = { warmupRounds: 5, rounds: 41, collectGarbage: false };

/** The same host, its model asked for whole replies (`doGenerate`) rather than streams. */
export const wholeReplies = (host: Host): Host => ({
  ...host,
  model: { ...host.model, capabilities: { ...host.model.capabilities, streaming: false } },
});

/**
 * What streaming costs a run: the same in-memory run with replies read as streams, every piece
 * read by a watcher of `run.events()` (as the CLI's live line reads them), against replies
 * requested whole with the audit events read alone. Interleaved round by round; the row is the
 * median of the rounds' CPU ratios (its wall ratio in the details).
 */
export async function streamingCost(workload: Workload): Promise<Comparison> {
  const pipeline = await pipelineOf(workload);
  const streamed = hostFor(workload);
  const whole = wholeReplies(hostFor(workload));
  let pieces = 0;
  const runWith = async (host: Host, deltas: boolean) => {
    const started = await startRun(pipeline, {
      host,
      runId: nextRunId("bench"),
      task: "benchmark streaming",
    });
    if (!started.ok) throw started.error;
    for await (const event of started.value.events({ deltas }))
      if (event.type === "ModelDelta") pieces++;
    const result = await started.value.result;
    if (result.status !== "done") throw new Error(`run ended ${result.status}`);
  };
  const rounds = (host: Host, deltas: boolean) => async () => {
    for (let i = 0; i < RUNS_PER_ROUND; i++) await runWith(host, deltas);
  };
  const timing = await timeInterleaved(
    { baseline: { run: rounds(whole, false) }, candidate: { run: rounds(streamed, true) } },
    PLAN,
  );
  const wholeMs = timing.baselineMs.median / RUNS_PER_ROUND;
  const turns = workload.stages * workload.turns;
  const streamsAloneMs = (await nodeStreamCpuMs()) * turns;
  const streamingMs = timing.candidateMs.median / RUNS_PER_ROUND;
  const row = compare(
    `streaming: ${workload.stages} stages × ${workload.turns} turns, per run (ratio: CPU)`,
    "ms",
    { label: "whole replies", value: wholeMs },
    { label: "streamed, pieces read", value: streamingMs },
    {
      piecesPerRun: pieces / (timing.rounds * 2 * RUNS_PER_ROUND),
      rounds: timing.rounds,
      runsPerRound: RUNS_PER_ROUND,
      wallRatio: timing.ratio.median,
      cpuRatioQuartiles: quartilesOf(timing.cpuRatio),
      streamsAloneMsPerRun: streamsAloneMs,
      streamsAloneRatio: (wholeMs + streamsAloneMs) / wholeMs,
    },
    1.1,
  );
  return { ...row, ratio: timing.cpuRatio.median };
}

/**
 * The CPU time of one reply's stream on its own: a turn's reply of the benchmark's shape (a tool
 * call) made into a `ReadableStream` the way the scripted model makes it and read to its end,
 * with nothing else. What a run's turns spend in the platform's web streams, which no engine
 * reading them can do without (on Node 20 the constructor alone makes each stream transferable).
 */
async function nodeStreamCpuMs(): Promise<number> {
  const reply = {
    content: [
      {
        type: "tool-call" as const,
        toolCallId: "call-1",
        toolName: "lookup",
        input: '{"key":"s1-3"}',
      },
    ],
    finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
    usage: {
      inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 10, text: 10, reasoning: 0 },
    },
  };
  const readAll = async () => {
    const reader = streamOf(reply).getReader();
    while (!(await reader.read()).done) {}
  };
  const times = 20_000;
  for (let i = 0; i < times / 10; i++) await readAll();
  const began = process.cpuUsage();
  for (let i = 0; i < times; i++) await readAll();
  const spent = process.cpuUsage(began);
  return (spent.user + spent.system) / 1000 / times;
}
