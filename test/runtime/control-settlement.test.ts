import { spawnSync } from "node:child_process";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import type { PipelineEvent } from "../../src/compiler/pipeline-context.js";
import { leaseOwner } from "../../src/runtime/lease-owner.js";
import { requestControl } from "../../src/runtime/live-control.js";
import { resumeRun } from "../../src/runtime/run.js";
import type { SqliteStore } from "../../src/store/index.js";
import { expectCancelAppliedOnce, killedWhileApplyingControl } from "../support/control-crash.js";
import { liveRun, openStore, slowPipeline } from "../support/live-runs.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { liveActor } from "./support/live-actor.js";

const requester = { pid: 1, host: "gone.example", user: "ops" };

/** A stored run of `slow`, in draft, whose lease a killed process of this machine holds. */
async function orphaned(file: string, runId: string): Promise<SqliteStore> {
  const owner = await liveRun(file, runId);
  owner.stop();
  await owner.result;
  const store = openStore(file);
  store.updateRun(runId, { status: "running" });
  store.acquireLease(runId, leaseOwner(spawnSync(process.execPath, ["-e", "0"]).pid), 60_000);
  return store;
}

/** Makes every step that audits a control request fail to store, as a full disk would. */
function failControlSteps(file: string): () => void {
  const db = new Database(file);
  db.exec(`CREATE TRIGGER refuse_control BEFORE INSERT ON steps
    WHEN NEW.events LIKE '%ControlRequested%' BEGIN SELECT RAISE(ABORT, 'disk full'); END`);
  return () => {
    db.exec("DROP TRIGGER refuse_control");
    db.close();
  };
}

const resume = async (store: SqliteStore, runId: string) => {
  const resumed = await resumeRun(slowPipeline(), runId, {
    host: harness("stages: {}").host,
    store,
  });
  if (!resumed.ok) throw resumed.error;
  return resumed.value;
};

const countOf = (store: SqliteStore, runId: string, type: string) =>
  store.auditOf(runId).filter((event) => event.type === type).length;

describe("a control request is settled by the step that applies it (SQLite store)", () => {
  it("a step that fails to store leaves the request taken; the next owner applies it once", async () => {
    const file = join(tempDir(), "runs.db");
    const store = await orphaned(file, "s1");
    const cancel: PipelineEvent = { type: "CANCEL", reason: "stop" };
    const { id } = store.enqueueControl("s1", {
      event: cancel,
      requester,
      timeoutMs: 60_000,
    });
    const mend = failControlSteps(file);
    expect((await (await resume(store, "s1")).result).status).toBe("suspended");
    expect(store.controlRequest(id)?.status).toBe("taken");
    expect(countOf(store, "s1", "ControlRequested")).toBe(0);

    mend();
    expect((await (await resume(store, "s1")).result).status).toBe("cancelled");
    expect(store.controlRequest(id)?.status).toBe("applied");
    expect(countOf(store, "s1", "ControlRequested")).toBe(1);
    expect(countOf(store, "s1", "RunCancelled")).toBe(1);
  });

  it("a refusal is settled with the step that audits it: taken until that step is stored", async () => {
    const file = join(tempDir(), "runs.db");
    const store = await orphaned(file, "s2");
    const move: PipelineEvent = { type: "OVERRIDE", to: "nowhere", reason: "why not" };
    const { id } = store.enqueueControl("s2", {
      event: move,
      requester,
      timeoutMs: 60_000,
    });
    const mend = failControlSteps(file);
    expect((await (await resume(store, "s2")).result).status).toBe("suspended");
    expect(store.controlRequest(id)?.status).toBe("taken");

    mend();
    const resumed = await resume(store, "s2");
    await waitFor(liveActor(resumed), (s) => s.context.current === "draft");
    while (store.controlRequest(id)?.status === "taken")
      await new Promise((settle) => setTimeout(settle, 20));
    expect(store.controlRequest(id)).toMatchObject({
      status: "refused",
      error: { code: "Session/IllegalTransition" },
    });
    expect(countOf(store, "s2", "RequestRefused")).toBe(1);
    resumed.send({ type: "CANCEL" });
    await resumed.result;
    expect(countOf(store, "s2", "ControlRequested")).toBe(1);
  });

  it("a withdrawal between the take and the step applying it is refused: the run goes on and applies it", async () => {
    const file = join(tempDir(), "runs.db");
    const store = await orphaned(file, "s3");
    const { id } = store.enqueueControl("s3", {
      event: { type: "CANCEL", reason: "stop" },
      requester,
      timeoutMs: 60_000,
    });
    // The requester gives up (its timeout) in the instant between the take and the store.
    const withdrawals: boolean[] = [];
    const withdrawing: SqliteStore = Object.create(store);
    withdrawing.commitStep = (runId, step) => {
      if (step.controls?.length) withdrawals.push(store.settleControl(id, { status: "expired" }));
      return store.commitStep(runId, step);
    };
    expect((await (await resume(withdrawing, "s3")).result).status).toBe("cancelled");
    expect(withdrawals).toEqual([false]);
    expect(store.controlRequest(id)?.status).toBe("applied");
    expect(countOf(store, "s3", "ControlRequested")).toBe(1);
    expect(countOf(store, "s3", "RunCancelled")).toBe(1);
  });

  it("a requester whose owner stops after taking its request is told Session/ControlTaken; the next owner applies it", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "s4");
    const mend = failControlSteps(file);
    const asker = openStore(file);
    const asked = await requestControl(asker, "s4", { type: "CANCEL", reason: "stop" });
    expect(asked.ok ? undefined : asked.error.code).toBe("Session/ControlTaken");
    expect((await owner.result).status).toBe("suspended");
    const id = Number(asked.ok ? undefined : asked.error.context.requestId);
    expect(asker.controlRequest(id)?.status).toBe("taken");

    mend();
    expect((await (await resume(asker, "s4")).result).status).toBe("cancelled");
    expect(asker.controlRequest(id)?.status).toBe("applied");
    expect(countOf(asker, "s4", "ControlRequested")).toBe(1);
  });

  it("an owner SIGKILLed as it stores the step applying a CANCEL it took leaves it taken; the resumed run applies it once", async () => {
    const crash = await killedWhileApplyingControl(
      (dir) => join(dir, "runs.db"),
      async (dir) => openStore(join(dir, "runs.db")),
      { type: "CANCEL", reason: "stop" },
    );
    expectCancelAppliedOnce(crash);
  }, 60_000);
});
