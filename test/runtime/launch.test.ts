import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { startRun } from "../../src/runtime/run.js";
import type { RunStore } from "../../src/runtime/store-port.js";
import { SqliteStore } from "../../src/store/index.js";
import { pipelineOf, waits } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

/** A run parked in a code stage that waits a minute, stopped at once: it settles suspended. */
async function stoppedRun(store?: RunStore) {
  const pipeline = pipelineOf({ id: "waiting", stages: [waits("long", 60_000)], next: {} });
  const host = harness("stages: {}").host;
  const started = await startRun(pipeline, { host, runId: "run-stopped", ...(store && { store }) });
  if (!started.ok) throw started.error;
  const handle = started.value;
  const actor = new WeakRef(handle.actor as object);
  handle.stop();
  expect((await handle.result).status).toBe("suspended");
  return { handle, actor };
}

describe("a run's handle", () => {
  it("lets go of the actor once the run has settled", async () => {
    const { handle } = await stoppedRun();
    expect(handle.actor).toBeUndefined();
    expect(handle.send({ type: "CANCEL" })).toEqual({ ok: true, value: undefined });
  });

  it("kept after a suspended run, does not keep the stopped actor tree alive", async () => {
    const { handle, actor } = await stoppedRun();
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    expect(actor.deref()).toBeUndefined();
    expect(handle.runId).toBe("run-stopped");
  });

  it("of a durable run, lets go of the actor too, after the run's last commit", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stagechart-launch-"));
    const opened = SqliteStore.open(join(dir, "runs.db"));
    if (!opened.ok) throw opened.error;
    try {
      const { handle, actor } = await stoppedRun(opened.value);
      expect(handle.actor).toBeUndefined();
      await new Promise((resolve) => setImmediate(resolve));
      collectGarbage();
      expect(actor.deref()).toBeUndefined();
      expect(opened.value.getRun("run-stopped")).toMatchObject({ value: { status: "suspended" } });
    } finally {
      opened.value.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a run's inspection", () => {
  const pipeline = () => pipelineOf({ id: "waiting", stages: [waits("long", 60_000)], next: {} });

  it("installs no inspect hook when nobody inspects: XState builds no inspection events", async () => {
    const started = await startRun(pipeline(), {
      host: harness("stages: {}").host,
      runId: "run-quiet",
    });
    if (!started.ok) throw started.error;
    expect(started.value.actor?.options.inspect).toBeUndefined();
    started.value.stop();
    expect((await started.value.result).status).toBe("suspended");
  });

  it("hands an inspector every kind of inspection event of the run's actors", async () => {
    const kinds = new Set<string>();
    const started = await startRun(pipeline(), {
      host: harness("stages: {}").host,
      runId: "run-inspected",
      inspect: { next: (event) => kinds.add(event.type) },
    });
    if (!started.ok) throw started.error;
    started.value.stop();
    await started.value.result;
    expect([...kinds].sort()).toEqual(
      [
        "@xstate.action",
        "@xstate.actor",
        "@xstate.event",
        "@xstate.microstep",
        "@xstate.snapshot",
      ].sort(),
    );
  });
});
