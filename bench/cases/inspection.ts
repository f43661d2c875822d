import { join } from "node:path";
import { SqliteStore } from "../../src/index.js";
import { startInspectServer } from "../../src/inspect/server.js";
import { createRunInspector } from "../../src/inspect/stream.js";
import { timeSideBySide } from "../measure.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import { hostFor, pipelineOf, type Workload } from "../workload.js";

/**
 * The cost of `--inspect`: the same durable run, streamed through `@statelyai/inspect` to a live
 * inspect server in this process (as `run --inspect` starts one when none listens), against the
 * run alone, each until its result. Each inspected run opens its own stream as it starts; the
 * wait for the server to hold the final state comes after the result (untimed, reported apart).
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
  // The run's time is until its result is settled, as `run --inspect` reports it; the final
  // state's delivery comes after (the CLI waits for it before exiting), so it is timed apart.
  let delivering: { stream: ReturnType<typeof createRunInspector>; before: number } | undefined;
  const deliveryMs: number[] = [];
  const inspected = async () => {
    const before = ended();
    const stream = createRunInspector(url);
    const result = await runToEnd(pipeline, hostFor(workload), store, stream.inspect);
    delivering = { stream, before };
    return result;
  };
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
    await inspected();
    await delivered();
    deliveryMs.length = 0;
    const [plain, streamed] = await timeSideBySide(
      {
        name: "durable run",
        fn: () => runToEnd(pipeline, hostFor(workload), store),
        hooks: { afterEach: pause },
      },
      { name: "durable run, inspected", fn: inspected, hooks: { afterEach: delivered } },
    );
    const last = server.live.list().at(-1);
    return compare(
      `inspection: ${workload.stages} stages × ${workload.turns} turns, per durable run`,
      "ms",
      { label: "not inspected", value: plain.medianMs },
      { label: "streamed to a live server", value: streamed.medianMs },
      {
        streamBytesPerRun: last?.bytes,
        streamMessagesPerRun: last?.messages,
        finalStateDeliveredAfterResultMs: median(deliveryMs),
        plainRmePercent: plain.rme,
        inspectedRmePercent: streamed.rme,
      },
    );
  } finally {
    await server.close();
    store.close();
  }
}

/**
 * The same idle gap after every timed run, inspected or not: the wait for delivery must not hand
 * the inspected runs an idle loop (garbage collected, WAL checkpointed) the plain runs lack.
 */
const pause = () => new Promise<void>((resolve) => setTimeout(resolve, 10));

function median(values: number[]): number | undefined {
  const middle = [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return middle === undefined ? undefined : Number(middle.toFixed(2));
}
