import { describe, expect, it } from "vitest";
import { bundleDefinition } from "../../../src/bundles/index.js";
import { fingerprint } from "../../../src/compiler/definition-hash.js";
import type { PipelineDefinition } from "../../../src/definitions/pipeline-types.js";
import { ok, type StagechartError } from "../../../src/errors.js";
import type { RunResult } from "../../../src/runtime/launch.js";
import { LEASE_TTL_MS } from "../../../src/runtime/lease-owner.js";
import type { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { startWorkerPool } from "../../../src/store/postgres/worker-pool.js";
import { countingCalls, withDelays } from "../../support/delayed-scripts.js";
import { slowPipeline } from "../../support/live-runs.js";
import { harness, modelHarness } from "../../support/stage-harness.js";
import {
  bundledCodeReview,
  codeReviewScript,
  noPostgres,
  sharedStores,
} from "./support/shared-store.js";

const stores = sharedStores();

/** A run stored as `stagechart run --detach` leaves it: its row, nothing run yet. */
async function waiting(store: PostgresStore, pipeline: PipelineDefinition, runId: string) {
  const { hash, parts } = fingerprint(pipeline);
  const created = await store.createRun({
    runId,
    pipelineId: pipeline.id,
    definitionHash: hash,
    options: { ctx: { task: "refactor auth module" }, definition: parts },
  });
  if (!created.ok) throw created.error;
}

/**
 * A claim for the test: the first running run without a lease, leased to `owner`. The listing
 * may be stale by the time the lease is taken (the run may have ended and let its lease go
 * since), so the run's status is read again under the lease.
 */
const claimFrom = (store: PostgresStore) => async (owner: string) => {
  for (const { runId } of await store.listRuns({ status: "running" })) {
    if (await store.leaseHolder(runId)) continue;
    if (!(await store.acquireLease(runId, owner, LEASE_TTL_MS)).ok) continue;
    const run = await store.getRun(runId);
    if (run.ok && run.value.status === "running") return runId;
    await store.releaseLease(runId, owner);
  }
  return undefined;
};

describe.skipIf(noPostgres)("a worker pool on the shared store", () => {
  it("drives every waiting run to done, each by exactly one worker", async () => {
    const { url, store } = await stores.fresh();
    const pipeline = await bundledCodeReview();
    const runIds = ["review-1", "review-2", "review-3", "review-4", "review-5"];
    for (const runId of runIds) await waiting(store, pipeline, runId);

    const outcomes: [string, RunResult | StagechartError][] = [];
    let allDone = () => {};
    const finished = new Promise<void>((resolve) => {
      allDone = resolve;
    });
    const pool = async () => {
      const own = await stores.reopen(url);
      return startWorkerPool({
        store: own,
        claim: claimFrom(own),
        prepare: async () => ok({ pipeline, host: harness(codeReviewScript()).host }),
        concurrency: 2,
        idleMs: 50,
        onRun: (runId, outcome) => {
          outcomes.push([runId, outcome]);
          if (outcomes.length === runIds.length) allDone();
        },
      });
    };
    const pools = [await pool(), await pool()];
    await finished;
    await Promise.all(pools.map((each) => each.stop()));

    expect(outcomes.map(([runId]) => runId).sort()).toEqual(runIds);
    for (const [, outcome] of outcomes) expect(outcome).toMatchObject({ status: "done" });
    for (const runId of runIds) {
      const run = await store.getRun(runId);
      expect(run.ok && run.value.status).toBe("done");
      const events = await store.auditOf(runId);
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
      expect(events.filter((event) => event.type === "RunStarted")).toHaveLength(1);
      expect(events.filter((event) => event.type === "RunCompleted")).toHaveLength(1);
    }
  });

  it("gives back a run whose prepare throws, with a coded error, and does not take it straight back", async () => {
    const { store } = await stores.fresh();
    const bundled = await bundleDefinition(await bundledCodeReview());
    if (!bundled.ok) throw bundled.error;
    await store.saveDefinition(bundled.value.hash, bundled.value.bundle);
    const queued = await store.enqueueRun({
      runId: "review-1",
      pipelineId: "code-review",
      definitionHash: bundled.value.hash,
      options: {},
    });
    if (!queued.ok) throw queued.error;
    const outcomes: [string, RunResult | StagechartError][] = [];
    const pool = startWorkerPool({
      store,
      claim: async (owner) => (await store.claimRun(owner, LEASE_TTL_MS))?.runId,
      prepare: async () => {
        throw new Error("this machine's disk is gone");
      },
      untilIdle: true,
      onRun: (runId, outcome) => outcomes.push([runId, outcome]),
    });
    await pool.done;
    expect(outcomes).toMatchObject([
      ["review-1", { code: "Session/PrepareFailed", message: "this machine's disk is gone" }],
    ]);
    const run = await store.getRun("review-1");
    expect(run.ok && run.value.status).toBe("queued");
    expect(await store.leaseHolder("review-1")).toBeUndefined();
  });

  it("stops: the run under way keeps its stored steps, its lease given up, and is queued again", async () => {
    const { store } = await stores.fresh();
    const pipeline = slowPipeline();
    await waiting(store, pipeline, "slow-1");
    const outcomes: (RunResult | StagechartError)[] = [];
    const worker = startWorkerPool({
      store,
      claim: claimFrom(store),
      prepare: async () => ok({ pipeline, host: harness("stages: {}").host }),
      idleMs: 50,
      onRun: (_, outcome) => outcomes.push(outcome),
    });
    // Running once its first stage is set up (the launch returns once that is stored).
    while (!(await store.auditOf("slow-1")).some((event) => event.type === "StageSetup"))
      await new Promise((later) => setTimeout(later, 20));

    await worker.stop();
    expect(outcomes).toMatchObject([{ status: "suspended" }]);
    const run = await store.getRun("slow-1");
    expect(run.ok && run.value.status).toBe("queued");
    expect(await store.leaseHolder("slow-1")).toBeUndefined();
    expect((await store.auditOf("slow-1")).at(-1)?.type).toBe("RunSuspended");
  });

  it("lets a run's model call in flight be answered and stored before it stops the run", async () => {
    const { store } = await stores.fresh();
    const pipeline = await bundledCodeReview();
    await waiting(store, pipeline, "review-1");
    const bundled = await bundleDefinition(pipeline);
    if (!bundled.ok) throw bundled.error;
    await store.saveDefinition(bundled.value.hash, bundled.value.bundle);
    const slowScript = withDelays(codeReviewScript(), 150);
    const counted = countingCalls(harness(slowScript).host.model);
    const first = startWorkerPool({
      store,
      claim: claimFrom(store),
      prepare: async () => ok({ pipeline, host: modelHarness(counted.handle).host }),
      idleMs: 50,
      stopGraceMs: 30_000,
    });
    while (counted.calls.started < 2 || counted.calls.answered === counted.calls.started)
      await new Promise((later) => setTimeout(later, 5));

    await first.stop();
    expect(counted.calls.answered).toBe(counted.calls.started);
    const modelEntries = async () =>
      (await store.journalOf("review-1")).filter((entry) => entry.key.startsWith("model:"));
    expect(await modelEntries()).toHaveLength(counted.calls.started);
    const stopped = await store.getRun("review-1");
    expect(stopped.ok && stopped.value.status).toBe("queued");

    // Another worker takes it on from there: no recorded call is made again.
    const again = countingCalls(harness(slowScript).host.model);
    const second = startWorkerPool({
      store,
      claim: async (owner) => (await store.claimRun(owner, LEASE_TTL_MS))?.runId,
      prepare: async () => ok({ pipeline, host: modelHarness(again.handle).host }),
      untilIdle: true,
    });
    await second.done;
    const finished = await store.getRun("review-1");
    expect(finished.ok && finished.value.status).toBe("done");
    expect(await modelEntries()).toHaveLength(counted.calls.started + again.calls.started);
    const events = await store.auditOf("review-1");
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  });
});
