import { afterEach, describe, expect, it } from "vitest";
import { startRun } from "../../../src/runtime/run.js";
import { countStatements, type StatementCount } from "../../support/postgres-statements.js";
import { harness } from "../../support/stage-harness.js";
import {
  bundledCodeReview,
  codeReviewScript,
  noPostgres,
  sharedStores,
} from "./support/shared-store.js";

const stores = sharedStores();
/** A committed step's round trips to the server, at most. */
const MOST_ROUND_TRIPS = 3;

let counting: StatementCount | undefined;
afterEach(() => {
  counting?.restore();
  counting = undefined;
});

const event = (type: "RunStarted" | "RunResumed") => ({ type, runId: "run-1", payload: {} });

describe.skipIf(noPostgres)("a step committed to the PostgreSQL store", () => {
  it(`takes at most ${MOST_ROUND_TRIPS} round trips, with everything a step carries, under its lease`, async () => {
    const { store } = await stores.fresh();
    const created = await store.createRun({
      runId: "run-1",
      pipelineId: "plan-build",
      definitionHash: "hash-1",
      options: {},
    });
    if (!created.ok) throw created.error;
    expect((await store.acquireLease("run-1", "worker-a", 60_000)).ok).toBe(true);
    const cancel = { type: "CANCEL" as const, reason: "enough" };
    const requester = { pid: 1, host: "here", user: "me" };
    const request = await store.enqueueControl("run-1", {
      event: cancel,
      requester,
      timeoutMs: 1e4,
    });
    expect(await store.takeControl(request.id)).toBe(true);

    counting = countStatements(store);
    const snapshot = (stage: string) => ({ value: stage, context: { task: "x".repeat(2000) } });
    await store.commitStep("run-1", {
      owner: "worker-a",
      events: [event("RunStarted"), event("RunResumed")],
      snapshot: snapshot("plan"),
      journal: [{ key: "model:run-1/run-1/plan/1/0", value: { reply: "a plan" } }],
      transcripts: [
        { stageExecutionId: "run-1/plan/1", key: "k0", entry: { role: "user", text: "plan it" } },
      ],
      controls: [{ id: request.id, status: "applied" }],
    });
    for (const stage of ["build", "review", "ship"])
      await store.commitStep("run-1", {
        owner: "worker-a",
        events: [event("RunResumed")],
        snapshot: snapshot(stage),
      });
    await store.commitStep("run-1", { owner: "worker-a", events: [] });

    expect(counting.perCommit).toHaveLength(5);
    for (const statements of counting.perCommit)
      expect(statements).toBeLessThanOrEqual(MOST_ROUND_TRIPS);
    expect(counting.total).toBe(counting.inCommits);
    expect((await store.auditOf("run-1")).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(await store.getSnapshot("run-1")).toMatchObject({
      ok: true,
      value: { snapshot: snapshot("ship") },
    });
    expect(await store.controlRequest(request.id)).toMatchObject({ status: "applied" });
  });

  it(`takes at most ${MOST_ROUND_TRIPS} round trips for each step of a durable run of the bundled code-review pipeline`, async () => {
    const { store } = await stores.fresh();
    counting = countStatements(store);
    const started = await startRun(await bundledCodeReview(), {
      host: harness(codeReviewScript()).host,
      store,
      runId: "review-1",
      task: "refactor auth module",
    });
    if (!started.ok) throw started.error;
    expect((await started.value.result).status).toBe("done");

    const steps = await store.stepsOf("review-1");
    expect(counting.commits).toBe(steps.length);
    expect(Math.max(...counting.perCommit)).toBeLessThanOrEqual(MOST_ROUND_TRIPS);
  });
});
