import { spawnSync } from "node:child_process";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { waitFor } from "xstate";
import type { PipelineEvent } from "../../../src/compiler/pipeline-context.js";
import { leaseOwner } from "../../../src/runtime/lease-owner.js";
import { requestControl } from "../../../src/runtime/live-control.js";
import { resumeRun, startRun } from "../../../src/runtime/run.js";
import type { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { liveActor } from "../../runtime/support/live-actor.js";
import {
  expectCancelAppliedOnce,
  killedWhileApplyingControl,
} from "../../support/control-crash.js";
import { slowPipeline } from "../../support/live-runs.js";
import { harness } from "../../support/stage-harness.js";
import { noPostgres, sharedStores } from "./support/shared-store.js";

const stores = sharedStores();
const requester = { pid: 1, host: "gone.example", user: "ops" };

/** A stored run of `slow`, in draft, whose lease a killed process of this machine holds. */
async function orphaned(store: PostgresStore, runId: string): Promise<void> {
  const started = await startRun(slowPipeline(), {
    host: harness("stages: {}").host,
    store,
    runId,
  });
  if (!started.ok) throw started.error;
  await waitFor(liveActor(started.value), (s) => s.context.current === "draft");
  started.value.stop();
  await started.value.result;
  await store.updateRun(runId, { status: "running" });
  const dead = leaseOwner(spawnSync(process.execPath, ["-e", "0"]).pid);
  const leased = await store.acquireLease(runId, dead, 60_000, () => true);
  if (!leased.ok) throw leased.error;
}

/** Makes every step that audits a control request fail to store, as a full disk would. */
async function failControlSteps(url: string): Promise<() => Promise<void>> {
  await sql(
    url,
    `CREATE FUNCTION refuse_control() RETURNS trigger AS $$ BEGIN
       IF NEW.events::text LIKE '%ControlRequested%' THEN RAISE EXCEPTION 'disk full'; END IF;
       RETURN NEW;
     END $$ LANGUAGE plpgsql;
     CREATE TRIGGER refuse_control BEFORE INSERT ON steps
       FOR EACH ROW EXECUTE FUNCTION refuse_control();`,
  );
  return () => sql(url, "DROP TRIGGER refuse_control ON steps");
}

async function resume(store: PostgresStore, runId: string) {
  const resumed = await resumeRun(slowPipeline(), runId, {
    host: harness("stages: {}").host,
    store,
  });
  if (!resumed.ok) throw resumed.error;
  return resumed.value;
}

const countOf = async (store: PostgresStore, runId: string, type: string) =>
  (await store.auditOf(runId)).filter((event) => event.type === type).length;

describe.skipIf(noPostgres)(
  "a control request on the shared store is settled by the step that applies it",
  () => {
    it("a step that fails to store leaves the request taken; the next owner applies it once", async () => {
      const { url, store } = await stores.fresh();
      await orphaned(store, "p1");
      const cancel: PipelineEvent = { type: "CANCEL", reason: "stop" };
      const { id } = await store.enqueueControl("p1", {
        event: cancel,
        requester,
        timeoutMs: 60_000,
      });
      const mend = await failControlSteps(url);
      expect((await (await resume(store, "p1")).result).status).toBe("suspended");
      expect((await store.controlRequest(id))?.status).toBe("taken");
      expect(await countOf(store, "p1", "ControlRequested")).toBe(0);

      await mend();
      expect((await (await resume(store, "p1")).result).status).toBe("cancelled");
      expect((await store.controlRequest(id))?.status).toBe("applied");
      expect(await countOf(store, "p1", "ControlRequested")).toBe(1);
      expect(await countOf(store, "p1", "RunCancelled")).toBe(1);
    });

    it("a withdrawal between the take and the step applying it is refused: the run goes on and applies it", async () => {
      const { store } = await stores.fresh();
      await orphaned(store, "p3");
      const { id } = await store.enqueueControl("p3", {
        event: { type: "CANCEL", reason: "stop" },
        requester,
        timeoutMs: 60_000,
      });
      // The requester gives up (its timeout) in the instant between the take and the store.
      const withdrawals: boolean[] = [];
      const withdrawing: PostgresStore = Object.create(store);
      withdrawing.commitStep = async (runId, step) => {
        if (step.controls?.length)
          withdrawals.push(await store.settleControl(id, { status: "expired" }));
        return store.commitStep(runId, step);
      };
      expect((await (await resume(withdrawing, "p3")).result).status).toBe("cancelled");
      expect(withdrawals).toEqual([false]);
      expect((await store.controlRequest(id))?.status).toBe("applied");
      expect(await countOf(store, "p3", "ControlRequested")).toBe(1);
      expect(await countOf(store, "p3", "RunCancelled")).toBe(1);
    });

    it("a requester whose timeout passes while the owner applies its request waits for the outcome", async () => {
      const { url, store } = await stores.fresh();
      // The owner stores the step applying a request only once its requester's timeout passed.
      let timedOut: () => void = () => {};
      const pastTimeout = new Promise<void>((settle) => {
        timedOut = settle;
      });
      const slowToStore: PostgresStore = Object.create(store);
      slowToStore.commitStep = async (runId, step) => {
        if (step.controls?.length) await pastTimeout;
        return store.commitStep(runId, step);
      };
      const started = await startRun(slowPipeline(), {
        host: harness("stages: {}").host,
        store: slowToStore,
        runId: "p5",
      });
      if (!started.ok) throw started.error;
      await waitFor(liveActor(started.value), (s) => s.context.current === "draft");
      const requesting = await stores.reopen(url);
      const timeoutMs = 1_000;
      const asked = performance.now();
      const seenAfterTimeout: string[] = [];
      const watching: PostgresStore = Object.create(requesting);
      watching.controlRequest = async (id) => {
        const request = await requesting.controlRequest(id);
        if (performance.now() - asked > timeoutMs && request) {
          seenAfterTimeout.push(request.status);
          if (request.status === "taken") timedOut();
        }
        return request;
      };
      const cancel: PipelineEvent = { type: "CANCEL", reason: "not needed" };
      const outcome = await requestControl(watching, "p5", cancel, { timeoutMs, pollMs: 20 });
      expect(outcome.ok && outcome.value.status).toBe("applied");
      expect(seenAfterTimeout[0]).toBe("taken");
      expect((await started.value.result).status).toBe("cancelled");
    });

    it("a requester whose clock runs an hour ahead still finds the live owner and is applied", async () => {
      const { url, store } = await stores.fresh();
      const started = await startRun(slowPipeline(), {
        host: harness("stages: {}").host,
        store,
        runId: "p4",
      });
      if (!started.ok) throw started.error;
      await waitFor(liveActor(started.value), (s) => s.context.current === "draft");
      const elsewhere = await stores.reopen(url);
      vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 3_600_000 });
      try {
        const cancel: PipelineEvent = { type: "CANCEL", reason: "not needed" };
        const asked = await requestControl(elsewhere, "p4", cancel, { timeoutMs: 20_000 });
        expect(asked.ok && asked.value.status).toBe("applied");
      } finally {
        vi.useRealTimers();
      }
      expect((await started.value.result).status).toBe("cancelled");
    });

    it("an owner SIGKILLed as it stores the step applying a CANCEL it took leaves it taken; the resumed run applies it once", async () => {
      const { url } = await stores.fresh();
      const crash = await killedWhileApplyingControl(
        () => url,
        () => stores.reopen(url),
        { type: "CANCEL", reason: "stop" },
      );
      expectCancelAppliedOnce(crash);
    }, 60_000);
  },
);

/** Runs SQL on the database behind the store's back. */
async function sql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
