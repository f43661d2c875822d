import { join } from "node:path";
import { waitFor } from "xstate";
import { type RunHandle, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { liveActor } from "../runtime/support/live-actor.js";
import { code, pipelineOf, waits } from "./pipelines.js";
import { harness } from "./stage-harness.js";
import { tempDir } from "./stages.js";

/** A store on `file` (a fresh one by default). */
export function openStore(file = join(tempDir(), "runs.db")): SqliteStore {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

/** draft waits a minute (unless cancelled or overridden), then publish ends the run. */
export const slowPipeline = () =>
  pipelineOf({
    id: "slow",
    stages: [waits("draft", 60_000), code("publish", () => ({ verdict: "ok" }))],
    next: { draft: "publish" },
  });

/** A run of the slow pipeline owned by its own handle (a lease owner of its own, as another process's), in draft. */
export async function liveRun(file: string, runId: string): Promise<RunHandle> {
  const started = await startRun(slowPipeline(), {
    host: harness("stages: {}").host,
    store: openStore(file),
    runId,
  });
  if (!started.ok) throw started.error;
  await waitFor(liveActor(started.value), (s) => s.context.current === "draft");
  return started.value;
}
