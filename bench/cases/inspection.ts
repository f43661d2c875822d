import { join } from "node:path";
import { SqliteStore } from "../../src/index.js";
import { startInspectServer } from "../../src/inspect/server.js";
import { createRunInspector } from "../../src/inspect/stream.js";
import { type InterleavingPlan, spreadOf, timeInterleaved } from "../interleaved.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

/** 41 timed pairs (an odd count, so the median is one round's ratio) after 8 warm-up pairs. */
const PLAN: InterleavingPlan = { warmupRounds: 8, rounds: 41 };

/**
 * The cost of `--inspect`: the same durable run, streamed through `@statelyai/inspect` to a live
 * inspect server in this process (as `run --inspect` starts one when none listens), against the
 * run alone, each until its result. Each inspected run opens its own stream as it starts; the
 * wait for the server to hold the final state comes after the result (untimed, reported apart).
 * The two alternate (ABAB…, the order swapped every round) and the figure is the median of the
 * rounds' ratios, with their interquartile range.
 */
export async function inspectionOverhead(workload: Workload, dir: string): Promise<Comparison> {
  const pipeline = await pipelineOf(workload);
  const storePath = join(dir, "inspection.db");
  const opened = SqliteStore.open(storePath);
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  const server = await startInspectServer({ storePath, port: 0 });
  const url = `ws://127.0.0.1:${server.port}/ws/inspect`;
  const ended = () => server.live.list().filter((root) => root.status !== "active").length;
  let delivering: { stream: ReturnType<typeof createRunInspector>; before: number } | undefined;
  const deliveryMs: number[] = [];
  const inspected = async () => {
    const before = ended();
    const stream = createRunInspector(url);
    const result = await runToEnd(pipeline, hostFor(workload), store, stream.inspect);
    delivering = { stream, before };
    return result;
  };
  // The final state's delivery comes after the result (`run --inspect` prints the result, then
  // waits for it before exiting), so it is timed apart, then both sides idle alike.
  const delivered = async () => {
    if (!delivering) return;
    const { stream, before } = delivering;
    const settled = performance.now();
    while (ended() === before) await new Promise((resolve) => setImmediate(resolve));
    deliveryMs.push(performance.now() - settled);
    stream.stop();
    delivering = undefined;
    await pause();
  };
  try {
    const timing = await timeInterleaved(
      {
        baseline: { run: () => runToEnd(pipeline, hostFor(workload), store), after: pause },
        candidate: { run: inspected, after: delivered },
      },
      PLAN,
    );
    const last = server.live.list().at(-1);
    const { ratio } = timing;
    return {
      ...compare(
        `inspection: ${workload.stages} stages × ${workload.turns} turns, per durable run`,
        "ms",
        { label: "not inspected", value: timing.baselineMs.median },
        { label: "streamed to a live server", value: timing.candidateMs.median },
        {
          rounds: timing.rounds,
          ratioMedian: ratio.median,
          ratioInterquartile: `${ratio.p25.toFixed(3)}–${ratio.p75.toFixed(3)}`,
          ratioRange: `${ratio.min.toFixed(3)}–${ratio.max.toFixed(3)}`,
          cpuRatioMedian: timing.cpuRatio.median,
          cpuRatioInterquartile: `${timing.cpuRatio.p25.toFixed(3)}–${timing.cpuRatio.p75.toFixed(3)}`,
          plainInterquartileMs: `${timing.baselineMs.p25.toFixed(1)}–${timing.baselineMs.p75.toFixed(1)}`,
          inspectedInterquartileMs: `${timing.candidateMs.p25.toFixed(1)}–${timing.candidateMs.p75.toFixed(1)}`,
          streamBytesPerRun: last?.bytes,
          streamMessagesPerRun: last?.messages,
          finalStateDeliveredAfterResultMs: spreadOf(deliveryMs.slice(-timing.rounds)).median,
        },
      ),
      // The paired rounds' median ratio, not the ratio of the two medians.
      ratio: ratio.median,
    };
  } finally {
    await server.close();
    store.close();
  }
}

/** The same idle gap after every timed run, inspected or not (garbage collected, WAL checkpointed). */
const pause = () => new Promise<void>((resolve) => setTimeout(resolve, 10));
