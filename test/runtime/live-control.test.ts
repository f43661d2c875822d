import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import { leaseOwner } from "../../src/runtime/lease-owner.js";
import { requestControl } from "../../src/runtime/live-control.js";
import { resumeRun } from "../../src/runtime/run.js";
import type { SqliteStore } from "../../src/store/index.js";
import { liveRun, openStore, slowPipeline } from "../support/live-runs.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { liveActor } from "./support/live-actor.js";

describe("a control request for a run another owner runs", () => {
  it("CANCEL is taken by the owner, applied there, and audited with who asked", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "r1");
    const asker = openStore(file);
    const asked = await requestControl(
      asker,
      "r1",
      { type: "CANCEL", reason: "stop" },
      { by: "ops" },
    );
    expect(asked).toMatchObject({ ok: true, value: { status: "applied" } });
    expect((await owner.result).status).toBe("cancelled");
    const audit = asker.auditOf("r1");
    const request = audit.find((e) => e.type === "ControlRequested");
    expect(request?.payload).toMatchObject({
      control: { type: "CANCEL", reason: "stop" },
      requestedBy: {
        by: "ops",
        pid: process.pid,
        user: expect.any(String),
        host: expect.any(String),
      },
    });
    expect(audit.findIndex((e) => e.type === "RunCancelled")).toBeGreaterThan(
      audit.indexOf(request as never),
    );
    expect(asker.getRun("r1")).toMatchObject({ ok: true, value: { status: "cancelled" } });
  });

  it("OVERRIDE is applied by the owner: the run moves on to the stage asked for", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "r2");
    const move = { type: "OVERRIDE" as const, to: "publish", reason: "draft is fine" };
    expect(await requestControl(openStore(file), "r2", move)).toMatchObject({ ok: true });
    const result = await owner.result;
    expect(result.status).toBe("done");
    expect(Object.keys(result.results)).toEqual(["publish"]);
  });

  it("one the owner refuses comes back with its reason, audited, and the run goes on", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "r3");
    const asker = openStore(file);
    const move = { type: "OVERRIDE" as const, to: "nowhere", reason: "why not" };
    const asked = await requestControl(asker, "r3", move);
    expect(asked.ok ? undefined : asked.error.code).toBe("Session/IllegalTransition");
    const refused = asker.auditOf("r3").find((e) => e.type === "RequestRefused");
    expect(refused?.payload).toMatchObject({
      control: move,
      requestedBy: { pid: process.pid },
      error: { code: "Session/IllegalTransition" },
    });
    expect(liveActor(owner).getSnapshot().context.current).toBe("draft");
    owner.send({ type: "CANCEL" });
    await owner.result;
  });

  it("times out with Session/ControlTimeout when the owner never takes it, and is withdrawn", async () => {
    const store = openStore();
    store.createRun({ runId: "r4", pipelineId: "slow", definitionHash: "h", options: {} });
    // A live owner on another machine that never looks at its queue.
    store.acquireLease("r4", "elsewhere.example:1:1:abcd", 60_000);
    const asked = await requestControl(store, "r4", { type: "CANCEL" }, { timeoutMs: 300 });
    expect(asked.ok ? undefined : asked.error.code).toBe("Session/ControlTimeout");
    expect(store.pendingControls("r4")).toEqual([]);
  });

  it("a run nobody runs now is Session/RunNotLive, and nothing is queued", async () => {
    const store = openStore();
    store.createRun({ runId: "r5", pipelineId: "slow", definitionHash: "h", options: {} });
    const asked = await requestControl(store, "r5", { type: "CANCEL" });
    expect(asked.ok ? undefined : asked.error.code).toBe("Session/RunNotLive");
    expect(store.pendingControls("r5")).toEqual([]);
  });
});

describe("a killed owner during a pending control request", () => {
  /** A stored run of `slow` whose lease a killed process of this machine holds. */
  async function orphaned(file: string, runId: string): Promise<SqliteStore> {
    const owner = await liveRun(file, runId);
    owner.stop();
    await owner.result;
    const store = openStore(file);
    store.updateRun(runId, { status: "running" });
    store.acquireLease(runId, leaseOwner(deadPid()), 60_000, () => true);
    return store;
  }

  it("the request is handled by the process that resumes the run", async () => {
    const file = join(tempDir(), "runs.db");
    const store = await orphaned(file, "r6");
    const requester = { pid: 1, host: "h", user: "u", by: "ops" };
    const { id } = store.enqueueControl("r6", {
      event: { type: "CANCEL", reason: "stop" },
      requester,
      timeoutMs: 60_000,
    });
    const resumed = await resumeRun(slowPipeline(), "r6", {
      host: harness("stages: {}").host,
      store,
    });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("cancelled");
    expect(store.controlRequest(id)?.status).toBe("applied");
    const audit = store.auditOf("r6");
    expect(audit.find((e) => e.type === "ControlRequested")?.payload).toMatchObject({
      requestedBy: requester,
    });
  });

  it("a requester still waiting is told Session/ControlExpired, and a later resume does not apply it", async () => {
    const file = join(tempDir(), "runs.db");
    const store = await orphaned(file, "r7");
    // The lease of a live owner elsewhere, that is then seen gone (killed) while the request waits.
    store.acquireLease("r7", "elsewhere.example:1:1:abcd", 60_000, () => true);
    const asked = requestControl(store, "r7", { type: "CANCEL" }, { timeoutMs: 60_000 });
    await until(() => store.pendingControls("r7").length === 1);
    store.acquireLease("r7", leaseOwner(deadPid()), 60_000, () => true);
    const answer = await asked;
    expect(answer.ok ? undefined : answer.error).toMatchObject({
      code: "Session/ControlExpired",
      context: { reason: "not-live" },
    });
    const resumed = await resumeRun(slowPipeline(), "r7", {
      host: harness("stages: {}").host,
      store,
    });
    if (!resumed.ok) throw resumed.error;
    await waitFor(liveActor(resumed.value), (s) => s.context.current === "draft");
    expect(store.auditOf("r7").map((e) => e.type)).not.toContain("ControlRequested");
    resumed.value.send({ type: "CANCEL" });
    await resumed.value.result;
  });
});

/** The pid of a process that has exited. */
const deadPid = () => spawnSync(process.execPath, ["-e", "0"]).pid;

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}
