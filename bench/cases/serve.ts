import { join } from "node:path";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import type { RunHandle } from "../../src/runtime/launch.js";
import { startRun } from "../../src/runtime/run.js";
import type { RunStore } from "../../src/runtime/store-port.js";
import { storedRunHost, withModel } from "../../src/runtime/stored-host.js";
import { startServeServer } from "../../src/serve/server.js";
import { SqliteStore } from "../../src/store/index.js";
import { servedProject } from "../../test/support/served-project.js";
import { quartilesOf, timeInterleaved } from "../interleaved.js";
import { type Comparison, compare } from "../report.js";

/** Starts a round times. */
const STARTS = 100;
const ROUNDS = 6;

/**
 * `STARTS` runs of code-review started over `stagechart serve`'s HTTP API (`POST /api/v1/runs`,
 * each answered once the run is started) against as many started through the library in this
 * process (`startRun` with the pipeline and host loaded once, as an embedding app does), each on
 * a SQLite store of its own. Only the starts are timed: the runs they started are waited for
 * after each side's round, untimed, so neither side's runs go on during the other's starts. What
 * the ratio holds is the HTTP request and what serve does per start that an app does once
 * (loading the pipeline, storing its definition, building the host). The project is the serve
 * tests' (`servedProject`): code-review's run on `quick.script.yaml` asks no grant, so it runs
 * to its end after each start, untimed.
 */
export async function serveStarts(dir: string): Promise<Comparison> {
  const { root: project, pipelines } = servedProject(dir);
  const served = SqliteStore.open(join(project, "served.db"));
  const library = SqliteStore.open(join(project, "library.db"));
  if (!served.ok) throw served.error;
  if (!library.ok) throw library.error;
  const settings = { root: project, mode: "ask" as const };
  const server = await startServeServer({
    store: served.value,
    runs: "in-process",
    pipelinesDir: pipelines,
    settings,
  });
  const file = join(pipelines, "code-review.yaml");
  const loaded = await loadPipelineFile(file);
  if (!loaded.ok) throw new Error("code-review does not load");
  const model = `scripted:${join(pipelines, "quick.script.yaml")}`;
  const host = await storedRunHost(
    withModel({ ...settings, pipelineFile: file, headless: true, onGrant: "deny" }, model),
  );
  if (!host.ok) throw host.error;
  const body = JSON.stringify({
    pipeline: "code-review",
    task: "rename auth",
    model: "scripted:quick.script.yaml",
  });
  const handles: RunHandle[] = [];
  try {
    const timing = await timeInterleaved(
      {
        baseline: {
          run: async () => {
            for (let i = 0; i < STARTS; i++) {
              const started = await startRun(loaded.value, {
                store: library.value,
                host: host.value,
                ctx: { task: "rename auth" },
              });
              if (!started.ok) throw started.error;
              handles.push(started.value);
            }
          },
          after: async () => {
            await Promise.all(handles.splice(0).map((handle) => handle.result));
          },
        },
        candidate: {
          run: async () => {
            for (let i = 0; i < STARTS; i++) {
              const reply = await fetch(`${server.apiUrl}/runs`, { method: "POST", body });
              if (reply.status !== 201) throw new Error(`start answered ${reply.status}`);
              await reply.arrayBuffer();
            }
          },
          after: () => allEnded(served.value),
        },
      },
      { warmupRounds: 1, rounds: ROUNDS, collectGarbage: false },
    );
    const perStart = (ms: number) => ms / STARTS;
    return compare(
      `serve: starting ${STARTS} runs`,
      "ms",
      { label: "startRun in process, per start", value: perStart(timing.baselineMs.median) },
      { label: "POST /api/v1/runs, per start", value: perStart(timing.candidateMs.median) },
      {
        rounds: timing.rounds,
        ratioQuartiles: quartilesOf(timing.ratio),
        cpuRatio: timing.cpuRatio.median,
        pairedRatioLow: timing.pairedRatio.low,
        pairedRatioHigh: timing.pairedRatio.high,
      },
    );
  } finally {
    await server.close();
    served.value.close();
    library.value.close();
  }
}

/** Waits until no run of the store is running any more. */
async function allEnded(store: RunStore): Promise<void> {
  while ((await store.listRuns({ status: "running", limit: 1 })).length > 0)
    await new Promise((resolve) => setTimeout(resolve, 10));
}
