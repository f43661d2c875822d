import { describe, expect, it } from "vitest";
import { fingerprint } from "../../../src/compiler/definition-hash.js";
import type { PipelineDefinition } from "../../../src/definitions/pipeline-types.js";
import { ok, type StagechartError } from "../../../src/errors.js";
import type { RunResult } from "../../../src/runtime/launch.js";
import { LEASE_TTL_MS } from "../../../src/runtime/persistence.js";
import type { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { startWorkerPool } from "../../../src/store/postgres/worker-pool.js";
import { slowPipeline } from "../../support/live-runs.js";
import { harness } from "../../support/stage-harness.js";
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

/** A claim for the test: the first running run without a lease, leased to `owner` (atomically). */
const claimFrom = (store: PostgresStore) => async (owner: string) => {
  for (const { runId } of await store.listRuns({ status: "running" })) {
    if (await store.leaseHolder(runId)) continue;
    if ((await store.acquireLease(runId, owner, LEASE_TTL_MS)).ok) return runId;
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

  it("stops: the run under way keeps its stored steps, is left suspended and its lease given up", async () => {
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
    expect(run.ok && run.value.status).toBe("suspended");
    expect(await store.leaseHolder("slow-1")).toBeUndefined();
    expect((await store.auditOf("slow-1")).at(-1)?.type).toBe("RunSuspended");
  });
});
