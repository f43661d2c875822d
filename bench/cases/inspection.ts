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
 * run alone. Each inspected run opens its own stream and closes it at the end.
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
  // As `run --inspect` does, the stream closes once the server has the run's final state.
  const inspected = async () => {
    const before = ended();
    const stream = createRunInspector(url);
    const result = await runToEnd(pipeline, hostFor(workload), store, stream.inspect);
    while (ended() === before) await new Promise((resolve) => setImmediate(resolve));
    stream.stop();
    return result;
  };
  try {
    await inspected();
    const [plain, streamed] = await timeSideBySide(
      { name: "durable run", fn: () => runToEnd(pipeline, hostFor(workload), store) },
      { name: "durable run, inspected", fn: inspected },
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
        plainRmePercent: plain.rme,
        inspectedRmePercent: streamed.rme,
      },
    );
  } finally {
    await server.close();
    store.close();
  }
}
