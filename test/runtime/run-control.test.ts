import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { ok } from "../../src/errors.js";
import type { Host } from "../../src/runtime/host.js";
import { startRun } from "../../src/runtime/run.js";
import { createRunControl, type RunControl } from "../../src/runtime/run-control.js";
import type { RunStore } from "../../src/runtime/store-port.js";
import { noPostgres, sharedStores } from "../store/postgres/support/shared-store.js";
import { liveRun, openStore } from "../support/live-runs.js";
import { codeReviewScriptOf, llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

const planOnly = pipelineOf({ id: "plan-only", stages: [llm("plan")] });
const asking = pipelineOf({
  id: "asking",
  stages: [
    {
      kind: "ask",
      id: "size",
      prompt: "How many points?",
      schema: { type: "object", required: ["points"], properties: { points: { type: "number" } } },
    },
  ],
});
const suspending = (script = codeReviewScriptOf("plan")) =>
  harness(script, { unansweredGrants: "suspend" });

/** A control that resumes a stored run here with `pipeline` on a fresh host. */
const controlOf = (store: RunStore, pipeline: PipelineDefinition, host: () => Host): RunControl =>
  createRunControl({ store, by: "test", prepare: async () => ok({ pipeline, host: host() }) });

/** A run of `pipeline` stored on `store`, parked where it waits for an answer. */
async function parked(store: RunStore, pipeline: PipelineDefinition, runId: string) {
  const host = suspending(pipeline === asking ? "stages: {}" : undefined).host;
  const started = await startRun(pipeline, { host, store, runId, task: "t" });
  if (!started.ok) throw started.error;
  const result = await started.value.result;
  expect(result.status).toBe("suspended");
  return result;
}

const shared = sharedStores();
const kinds: [string, () => Promise<RunStore>, boolean][] = [
  ["SQLite", async () => openStore(join(tempDir(), "runs.db")), false],
  ["PostgreSQL", async () => (await shared.fresh()).store, noPostgres],
];

describe.each(kinds)("the run control on the %s store", (_kind, fresh, skip) => {
  it.skipIf(skip)(
    "approves the grant a suspended run waits for, resuming it here to its end",
    async () => {
      const store = await fresh();
      const { waiting } = await parked(store, planOnly, "g1");
      const proposalId = waiting?.find((w) => w.kind === "grant")?.proposalId as string;
      expect(proposalId).toEqual(expect.any(String));
      const control = controlOf(store, planOnly, () => suspending().host);
      const done = await control.approve("g1", proposalId, "approve");
      if (!done.ok) throw done.error;
      expect(done.value.outcome).toBe("resumed");
      if (done.value.outcome !== "resumed") return;
      expect((await done.value.done).status).toBe("done");
      const audit = await store.auditOf("g1");
      expect(audit.find((e) => e.type === "RunResumed")?.payload).toMatchObject({
        answers: [{ proposalId, decision: "approve" }],
      });
      expect(audit.some((e) => e.type === "GrantIssued")).toBe(true);
    },
  );

  it.skipIf(skip)("answers an ask stage a suspended run waits on", async () => {
    const store = await fresh();
    const { waiting } = await parked(store, asking, "a1");
    const question = waiting?.find((w) => w.kind === "input");
    const control = controlOf(store, asking, () => suspending("stages: {}").host);
    const bad = await control.answer("a1", question?.stageExecutionId as string, { points: "x" });
    expect(bad.ok ? undefined : bad.error.code).toBe("Validation/InputInvalid");
    const done = await control.answer("a1", question?.stageExecutionId as string, { points: 3 });
    if (!done.ok) throw done.error;
    if (done.value.outcome !== "resumed") throw new Error("not resumed");
    const result = await done.value.done;
    expect(result.status).toBe("done");
    expect(result.results.size?.output).toEqual({ points: 3 });
  });

  it.skipIf(skip)("cancels a suspended run by resuming it with the cancel", async () => {
    const store = await fresh();
    await parked(store, planOnly, "c1");
    const done = await controlOf(store, planOnly, () => suspending().host).send("c1", {
      type: "CANCEL",
      reason: "not needed",
    });
    if (!done.ok || done.value.outcome !== "resumed") throw new Error("not resumed");
    expect((await done.value.done).status).toBe("cancelled");
    expect((await store.getRun("c1")).ok).toBe(true);
  });

  it.skipIf(skip)("without a way to resume runs, refuses a run no live process owns", async () => {
    const store = await fresh();
    await parked(store, planOnly, "n1");
    const refused = await createRunControl({ store }).send("n1", { type: "CANCEL" });
    expect(refused.ok ? undefined : refused.error.code).toBe("Session/RunNotLive");
    const unknown = await createRunControl({ store }).send("nobody", { type: "CANCEL" });
    expect(unknown.ok ? undefined : unknown.error.code).toBe("Session/RunNotFound");
  });
});

describe("the run control and a live run", () => {
  it("hands a control event to the process that owns the run, which applies it", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "l1");
    // The prepare is never called: the live owner applies the event.
    const control = createRunControl({
      store: openStore(file),
      prepare: async () => {
        throw new Error("a live run is not resumed here");
      },
    });
    const applied = await control.send("l1", { type: "CANCEL", reason: "stop" });
    expect(applied).toMatchObject({ ok: true, value: { outcome: "applied", runId: "l1" } });
    expect((await owner.result).status).toBe("cancelled");
  });

  it("passes the owner's refusal back", async () => {
    const file = join(tempDir(), "runs.db");
    const owner = await liveRun(file, "l2");
    const refused = await createRunControl({ store: openStore(file) }).send("l2", {
      type: "OVERRIDE",
      to: "nowhere",
      reason: "why not",
    });
    expect(refused.ok ? undefined : refused.error.code).toBe("Session/IllegalTransition");
    owner.stop();
    await owner.result;
  });
});
