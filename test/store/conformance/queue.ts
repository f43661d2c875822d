import { describe, expect, it } from "vitest";
import type { RunStore } from "../../../src/runtime/store-port.js";
import { failure, manualClock, newRun, okValue, type StoreHarness } from "./harness.js";

const bundle = {
  entry: "machines/plan-build.yaml",
  files: {
    "machines/plan-build.yaml": "id: plan-build\n",
    "stages/plan.md": "---\nid: plan\n---\nPlan.\n",
  },
};

/** A queued run of the stored definition `hash-1` (harness.newRun's hash). */
async function enqueue(store: RunStore, runId: string) {
  return okValue(await store.enqueueRun(newRun(runId)));
}

/** Claims runs until none is left; the ids this claimer got. */
async function claimAll(store: RunStore, owner: string): Promise<string[]> {
  const claimed: string[] = [];
  for (;;) {
    const run = await store.claimRun(owner, 60_000);
    if (!run) return claimed;
    claimed.push(run.runId);
  }
}

/** Definitions stored by hash, queued runs and claiming them: what a worker needs. */
export function runQueue(harness: StoreHarness): void {
  describe("definitions", () => {
    it("are stored once per hash and read back as written", async () => {
      const { store } = await harness.fresh();
      await store.saveDefinition("hash-1", bundle);
      await store.saveDefinition("hash-1", { entry: "other.yaml", files: {} });
      expect(okValue(await store.loadDefinition("hash-1"))).toEqual(bundle);
      expect(failure(await store.loadDefinition("hash-9"))).toMatchObject({
        code: "Session/DefinitionNotFound",
        context: { definitionHash: "hash-9" },
      });
    });
  });

  describe("the run queue", () => {
    it("stores a run as queued, listed under that status", async () => {
      const { store } = await harness.fresh();
      expect((await enqueue(store, "run-1")).status).toBe("queued");
      expect(okValue(await store.getRun("run-1")).status).toBe("queued");
      expect(await store.listRuns({ status: "queued" })).toMatchObject([{ runId: "run-1" }]);
    });

    it("hands out the oldest queued run first, running and leased by its claimer", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      await store.saveDefinition("hash-1", bundle);
      await enqueue(store, "run-1");
      clock.advance(1);
      await enqueue(store, "run-2");
      const first = await store.claimRun("worker-a", 10_000);
      expect(first).toMatchObject({ runId: "run-1", status: "running" });
      expect(await store.leaseHolder("run-1")).toMatchObject({
        owner: "worker-a",
        expiresAt: Date.parse("2030-01-01T00:00:10.001Z"),
      });
      expect((await store.claimRun("worker-b", 10_000))?.runId).toBe("run-2");
      expect(await store.claimRun("worker-c", 10_000)).toBeUndefined();
    });

    it("leaves alone runs whose definition is not stored, and runs that are not queued", async () => {
      const { store } = await harness.fresh();
      await enqueue(store, "run-1");
      expect(await store.claimRun("worker-a", 10_000)).toBeUndefined();
      await store.saveDefinition("hash-1", bundle);
      okValue(await store.createRun({ ...newRun("run-2"), status: "suspended" }));
      okValue(await store.createRun(newRun("run-3")));
      expect((await store.claimRun("worker-a", 10_000))?.runId).toBe("run-1");
      expect(await store.claimRun("worker-a", 10_000)).toBeUndefined();
    });

    it("takes a suspended run once its earliest wait's deadline has passed, and not before", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      await store.saveDefinition("hash-1", bundle);
      okValue(await store.createRun(newRun("run-1")));
      const wakeAt = new Date(clock.now() + 5_000).toISOString();
      const parked = okValue(await store.updateRun("run-1", { status: "suspended", wakeAt }));
      expect(parked.wakeAt).toBe(wakeAt);
      expect(okValue(await store.getRun("run-1")).wakeAt).toBe(wakeAt);
      expect(await store.claimRun("worker-a", 10_000)).toBeUndefined();
      clock.advance(5_000);
      const woken = await store.claimRun("worker-a", 10_000);
      expect(woken).toMatchObject({ runId: "run-1", status: "running" });
      expect(woken?.wakeAt).toBeUndefined();
      expect(await store.leaseHolder("run-1")).toMatchObject({ owner: "worker-a" });
    });

    it("forgets a run's wake-up once its status changes without one", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      await store.saveDefinition("hash-1", bundle);
      okValue(await store.createRun(newRun("run-1")));
      const wakeAt = new Date(clock.now() + 1_000).toISOString();
      okValue(await store.updateRun("run-1", { status: "suspended", wakeAt }));
      // Answered by a person meanwhile: suspended again on a wait with no deadline.
      okValue(await store.updateRun("run-1", { status: "suspended" }));
      expect(okValue(await store.getRun("run-1")).wakeAt).toBeUndefined();
      clock.advance(2_000);
      expect(await store.claimRun("worker-a", 10_000)).toBeUndefined();
    });

    it("takes over a running run whose lease expired, and not one whose lease is live", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      await store.saveDefinition("hash-1", bundle);
      await enqueue(store, "run-1");
      expect((await store.claimRun("killed", 10_000))?.runId).toBe("run-1");
      clock.advance(9_999);
      expect(await store.claimRun("worker-b", 10_000)).toBeUndefined();
      clock.advance(1);
      expect(await store.claimRun("worker-b", 10_000)).toMatchObject({
        runId: "run-1",
        status: "running",
      });
      expect((await store.leaseHolder("run-1"))?.owner).toBe("worker-b");
      expect(failure(await store.renewLease("run-1", "killed", 10_000)).code).toBe(
        "Session/LeaseLost",
      );
    });

    it("cancels a run no worker took, which no worker then takes; a claimed run is not", async () => {
      const { store } = await harness.fresh();
      await store.saveDefinition("hash-1", bundle);
      await enqueue(store, "run-1");
      await enqueue(store, "run-2");
      expect(okValue(await store.cancelQueuedRun("run-1", "not needed")).status).toBe("cancelled");
      expect(await store.auditOf("run-1")).toMatchObject([
        {
          seq: 1,
          type: "RunCancelled",
          payload: { status: "cancelled", neverBegan: true, reason: "not needed" },
        },
      ]);
      expect((await store.claimRun("worker-a", 10_000))?.runId).toBe("run-2");
      expect(failure(await store.cancelQueuedRun("run-2"))).toMatchObject({
        code: "Session/RunNotQueued",
        context: { status: "running" },
      });
      expect(failure(await store.cancelQueuedRun("run-9")).code).toBe("Session/RunNotFound");
    });

    it("leaves a queued run a live process leased (a resume driving it) to that owner to cancel", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      await store.saveDefinition("hash-1", bundle);
      await enqueue(store, "run-1");
      // `resume` of a queued run leases it and drives it, its status still queued.
      okValue(await store.acquireLease("run-1", "cli-resume", 10_000));
      expect(failure(await store.cancelQueuedRun("run-1"))).toMatchObject({
        code: "Session/RunLocked",
        context: { owner: "cli-resume" },
      });
      expect(okValue(await store.getRun("run-1")).status).toBe("queued");
      expect(await store.auditOf("run-1")).toEqual([]);
      // Once that lease has expired (its process died), nobody drives it: cancelled in place.
      clock.advance(10_000);
      expect(okValue(await store.cancelQueuedRun("run-1")).status).toBe("cancelled");
    });

    it("gives a stopped run back in one step: its owner's lease given up and the run queued", async () => {
      const { store } = await harness.fresh();
      await store.saveDefinition("hash-1", bundle);
      await enqueue(store, "run-1");
      expect((await store.claimRun("worker-a", 10_000))?.runId).toBe("run-1");
      expect(await store.requeueRun("run-1", "worker-b")).toBe(false);
      expect(await store.leaseHolder("run-1")).toMatchObject({ owner: "worker-a" });

      expect(await store.requeueRun("run-1", "worker-a")).toBe(true);
      expect(okValue(await store.getRun("run-1")).status).toBe("queued");
      expect(await store.leaseHolder("run-1")).toBeUndefined();
      expect((await store.claimRun("worker-b", 10_000))?.runId).toBe("run-1");
    });

    it("queues again only a running or suspended run whose lease its owner still holds", async () => {
      const { store } = await harness.fresh();
      await store.saveDefinition("hash-1", bundle);
      okValue(await store.createRun({ ...newRun("run-1"), status: "suspended" }));
      okValue(await store.createRun({ ...newRun("run-2"), status: "done" }));
      okValue(await store.createRun({ ...newRun("run-3"), status: "cancelled" }));
      for (const runId of ["run-1", "run-2", "run-3"])
        okValue(await store.acquireLease(runId, "worker-a", 10_000));
      expect(await store.requeueRun("run-2", "worker-a")).toBe(false);
      expect(await store.requeueRun("run-3", "worker-a")).toBe(false);
      expect(await store.requeueRun("run-9", "worker-a")).toBe(false);
      expect(okValue(await store.getRun("run-2")).status).toBe("done");
      expect(okValue(await store.getRun("run-3")).status).toBe("cancelled");
      expect(await store.leaseHolder("run-2")).toMatchObject({ owner: "worker-a" });
      expect(await store.requeueRun("run-1", "worker-a")).toBe(true);
      expect((await store.claimRun("worker-b", 10_000))?.runId).toBe("run-1");
    });

    it("cancels a run queued again after it began without saying it never began", async () => {
      const { store } = await harness.fresh();
      okValue(await store.createRun({ ...newRun("run-1"), status: "suspended" }));
      okValue(await store.acquireLease("run-1", "worker-a", 10_000));
      await store.commitStep("run-1", {
        events: [{ type: "RunStarted", runId: "run-1", payload: {} }],
      });
      expect(await store.requeueRun("run-1", "worker-a")).toBe(true);
      okValue(await store.cancelQueuedRun("run-1"));
      const cancelled = (await store.auditOf("run-1")).at(-1);
      expect(cancelled).toMatchObject({ type: "RunCancelled", payload: { status: "cancelled" } });
      expect(cancelled?.payload).not.toHaveProperty("neverBegan");
    });

    it("hands a claimer asking for some pipelines only their runs, and the others to anyone", async () => {
      const clock = manualClock();
      const { store } = await harness.fresh(clock);
      await store.saveDefinition("hash-1", bundle);
      okValue(await store.enqueueRun({ ...newRun("run-1"), pipelineId: "code-review" }));
      clock.advance(1);
      okValue(await store.enqueueRun({ ...newRun("run-2"), pipelineId: "plan-build" }));
      const only = { pipelineIds: ["plan-build", "other"] };
      expect((await store.claimRun("worker-a", 10_000, only))?.runId).toBe("run-2");
      expect(await store.claimRun("worker-a", 10_000, only)).toBeUndefined();
      expect((await store.claimRun("worker-b", 10_000))?.runId).toBe("run-1");
    });

    it("gives each of 50 queued runs to exactly one of 5 claimers, each on its own store", async () => {
      const { store, reopen } = await harness.fresh();
      await store.saveDefinition("hash-1", bundle);
      const runIds = Array.from({ length: 50 }, (_, i) => `run-${String(i).padStart(2, "0")}`);
      for (const runId of runIds) await enqueue(store, runId);
      const claimers = await Promise.all(
        Array.from({ length: 5 }, async () => okValue(await reopen())),
      );
      const claimed = await Promise.all(
        claimers.map((claimer, i) => claimAll(claimer, `worker-${i}`)),
      );
      expect(claimed.flat().sort()).toEqual(runIds);
      for (const [i, ids] of claimed.entries()) {
        for (const runId of ids)
          expect((await store.leaseHolder(runId))?.owner).toBe(`worker-${i}`);
      }
    });
  });
}
