import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import type { PipelineEvent } from "../../src/compiler/pipeline-context.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { ok, StagechartError } from "../../src/errors.js";
import type { Host } from "../../src/runtime/host.js";
import { startRun } from "../../src/runtime/run.js";
import { createRunControl, type RunControl } from "../../src/runtime/run-control.js";
import type { RunStore } from "../../src/runtime/store-port.js";
import { noPostgres, sharedStores } from "../store/postgres/support/shared-store.js";
import { openStore, slowPipeline } from "../support/live-runs.js";
import { code, codeReviewScriptOf, llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { liveActor } from "./support/live-actor.js";

const planOnly = pipelineOf({ id: "plan-only", stages: [llm("plan")] });
const sizeQuestion = {
  kind: "ask" as const,
  id: "size",
  prompt: "How many points?",
  schema: { type: "object", required: ["points"], properties: { points: { type: "number" } } },
};
const asking = pipelineOf({ id: "asking", stages: [sizeQuestion] });
/** draft, then the size question (which parks the run: nobody answers), then publish. */
const draftAskPublish = (ran: string[] = []) =>
  pipelineOf({
    id: "draft-ask-publish",
    stages: [
      code("draft", ({ ctx }) => {
        ran.push(ctx.stageExecutionId);
        return { verdict: "ok", output: {} };
      }),
      sizeQuestion,
      code("publish", ({ ctx }) => {
        ran.push(ctx.stageExecutionId);
        return { verdict: "ok", output: { published: true } };
      }),
    ],
    next: { draft: "size", size: "publish" },
  });
/** plan, then check: a pipeline whose done runs may be reopened. */
const reopenable = (ran: string[] = []): PipelineDefinition => ({
  ...pipelineOf({
    id: "reopenable",
    stages: ["plan", "check"].map((id) =>
      code(id, ({ ctx }) => {
        ran.push(ctx.stageExecutionId);
        return { verdict: "ok", output: { by: id } };
      }),
    ),
    next: { plan: "check", check: "done" },
  }),
  reopenable: true,
});

const scriptless = () => harness("stages: {}", { unansweredGrants: "suspend" }).host;
const suspending = () => harness(codeReviewScriptOf("plan"), { unansweredGrants: "suspend" }).host;

/** A control that resumes a stored run here with `pipeline` on a fresh host. */
const controlOf = (store: RunStore, pipeline: PipelineDefinition, host: () => Host): RunControl =>
  createRunControl({ store, by: "test", prepare: async () => ok({ pipeline, host: host() }) });

/** A run of `pipeline` stored on `store`, run on `host` to where it stops. */
async function stopped(store: RunStore, pipeline: PipelineDefinition, runId: string, host: Host) {
  const started = await startRun(pipeline, { host, store, runId, task: "t" });
  if (!started.ok) throw started.error;
  return started.value.result;
}

/** A run of `pipeline` stored on `store`, parked where it waits for an answer. */
async function parked(store: RunStore, pipeline: PipelineDefinition, runId: string) {
  const host = pipeline === planOnly ? suspending() : scriptless();
  const result = await stopped(store, pipeline, runId, host);
  expect(result.status).toBe("suspended");
  return result;
}

/** The outcome of a request that resumed the run here, once the run stopped again. */
async function resumedToItsStop(outcome: Awaited<ReturnType<RunControl["act"]>>) {
  if (!outcome.ok) throw outcome.error;
  if (outcome.value.outcome !== "resumed") throw new Error(`not resumed: ${outcome.value.outcome}`);
  return outcome.value.done;
}

/** The slow pipeline's run, owned through `store` (as another process would), once in draft. */
async function liveOn(store: RunStore, runId: string) {
  const started = await startRun(slowPipeline(), { host: scriptless(), store, runId });
  if (!started.ok) throw started.error;
  await waitFor(liveActor(started.value), (s) => s.context.current === "draft");
  return started.value;
}

/** A store and another handle on it, as another process opens it. */
type StoreKind = () => Promise<{ store: RunStore; another(): Promise<RunStore> }>;

const shared = sharedStores();
const kinds: [string, StoreKind, boolean][] = [
  [
    "SQLite",
    async () => {
      const file = join(tempDir(), "runs.db");
      return { store: openStore(file), another: async () => openStore(file) };
    },
    false,
  ],
  [
    "PostgreSQL",
    async () => {
      const { url, store } = await shared.fresh();
      return { store, another: () => shared.reopen(url) };
    },
    noPostgres,
  ],
];

describe.each(kinds)("the run control on the %s store", (_kind, fresh, skip) => {
  it.skipIf(skip)(
    "approves the grant a suspended run waits for, resuming it here to its end",
    async () => {
      const { store } = await fresh();
      const { waiting } = await parked(store, planOnly, "g1");
      const proposalId = waiting?.find((w) => w.kind === "grant")?.proposalId as string;
      expect(proposalId).toEqual(expect.any(String));
      const control = controlOf(store, planOnly, suspending);
      const result = await resumedToItsStop(await control.approve("g1", proposalId, "approve"));
      expect(result.status).toBe("done");
      const audit = await store.auditOf("g1");
      expect(audit.find((e) => e.type === "RunResumed")?.payload).toMatchObject({
        answers: [{ proposalId, decision: "approve" }],
      });
      expect(audit.some((e) => e.type === "GrantIssued")).toBe(true);
    },
  );

  it.skipIf(skip)("denies it: the run goes on without the call", async () => {
    const { store } = await fresh();
    const { waiting } = await parked(store, planOnly, "g2");
    const proposalId = waiting?.find((w) => w.kind === "grant")?.proposalId as string;
    const control = controlOf(store, planOnly, suspending);
    await resumedToItsStop(await control.approve("g2", proposalId, "deny"));
    const audit = await store.auditOf("g2");
    expect(audit.find((e) => e.type === "RunResumed")?.payload).toMatchObject({
      answers: [{ proposalId, decision: "deny" }],
    });
    expect(audit.some((e) => e.type === "GrantIssued")).toBe(false);
  });

  it.skipIf(skip)("answers an ask stage a suspended run waits on", async () => {
    const { store } = await fresh();
    const { waiting } = await parked(store, asking, "a1");
    const question = waiting?.find((w) => w.kind === "input");
    const control = controlOf(store, asking, scriptless);
    const bad = await control.answer("a1", question?.stageExecutionId as string, { points: "x" });
    expect(bad.ok ? undefined : bad.error.code).toBe("Validation/InputInvalid");
    const result = await resumedToItsStop(
      await control.answer("a1", question?.stageExecutionId as string, { points: 3 }),
    );
    expect(result.status).toBe("done");
    expect(result.results.size?.output).toEqual({ points: 3 });
  });

  it.skipIf(skip)("cancels a suspended run by resuming it with the cancel", async () => {
    const { store } = await fresh();
    await parked(store, planOnly, "c1");
    const done = await controlOf(store, planOnly, suspending).send("c1", {
      type: "CANCEL",
      reason: "not needed",
    });
    expect((await resumedToItsStop(done)).status).toBe("cancelled");
    expect(await store.getRun("c1")).toMatchObject({ ok: true, value: { status: "cancelled" } });
  });

  it.skipIf(skip)("overrides a suspended run to a stage its transitions reach", async () => {
    const { store } = await fresh();
    const ran: string[] = [];
    const pipeline = draftAskPublish(ran);
    await parked(store, pipeline, "o1");
    const control = controlOf(store, pipeline, scriptless);
    const to: PipelineEvent = { type: "OVERRIDE", to: "publish", reason: "sized elsewhere" };
    const result = await resumedToItsStop(await control.send("o1", to));
    expect(result.status).toBe("done");
    expect(ran).toEqual(["o1/draft/1", "o1/publish/1"]);
    const nowhere = await control.send("o1", { type: "OVERRIDE", to: "nowhere", reason: "x" });
    expect(nowhere.ok ? undefined : nowhere.error.code).toBe("Session/RunFinished");
  });

  it.skipIf(skip)("redoes a stage of a suspended run as a new stage execution", async () => {
    const { store } = await fresh();
    const ran: string[] = [];
    const pipeline = draftAskPublish(ran);
    await parked(store, pipeline, "d1");
    const control = controlOf(store, pipeline, scriptless);
    const result = await resumedToItsStop(
      await control.send("d1", { type: "REDO", stage: "draft" }),
    );
    // Drafted again, then asked again: nobody answers, so it parks at the question once more.
    expect(result.status).toBe("suspended");
    expect(ran).toEqual(["d1/draft/1", "d1/draft/2"]);
  });

  it.skipIf(skip)("reopens a run that ended done, from the stage a redo names", async () => {
    const { store } = await fresh();
    const ran: string[] = [];
    const pipeline = reopenable(ran);
    expect((await stopped(store, pipeline, "r1", scriptless())).status).toBe("done");
    const control = controlOf(store, pipeline, scriptless);
    const unexplained = await control.send("r1", { type: "REDO", stage: "check" });
    expect(unexplained.ok ? undefined : unexplained.error.code).toBe(
      "Validation/ReopenReasonMissing",
    );
    const result = await resumedToItsStop(
      await control.act("r1", {
        control: { type: "REDO", stage: "check" },
        reason: "the check missed a case",
      }),
    );
    expect(result.status).toBe("done");
    expect(ran).toEqual(["r1/plan/1", "r1/check/1", "r1/check/2"]);
    const audit = await store.auditOf("r1");
    expect(audit.find((e) => e.type === "RunReopened")?.payload).toMatchObject({
      stage: "check",
      by: "test",
      reason: "the check missed a case",
    });
  });

  it.skipIf(skip)(
    "cancels a queued run where it is stored, with nothing to resume it with",
    async () => {
      const { store } = await fresh();
      const queued = await store.enqueueRun({
        runId: "q1",
        pipelineId: "plan-only",
        definitionHash: "h",
        options: {},
      });
      if (!queued.ok) throw queued.error;
      const cancelled = await createRunControl({ store }).send("q1", {
        type: "CANCEL",
        reason: "not wanted",
      });
      expect(cancelled).toMatchObject({
        ok: true,
        value: { runId: "q1", outcome: "cancelled", run: { status: "cancelled" } },
      });
      expect((await store.auditOf("q1")).map((e) => e.type)).toEqual(["RunCancelled"]);
    },
  );

  it.skipIf(skip)(
    "refuses to go on from what is left of a run whose steps the store lost, unless forced or cancelled",
    async () => {
      const { store } = await fresh();
      const { waiting } = await parked(store, planOnly, "l1");
      const proposalId = waiting?.find((w) => w.kind === "grant")?.proposalId as string;
      const loss = new StagechartError("Session/StoreDamaged", "run l1 lost its steps", {
        runId: "l1",
      });
      const damaged: RunStore = Object.create(store);
      damaged.lostSteps = () => [loss];
      const control = controlOf(damaged, planOnly, suspending);
      const answers = [{ proposalId, decision: "approve" as const }];
      const refused = await control.act("l1", { answers });
      expect(refused.ok ? undefined : refused.error.code).toBe("Session/StoreDamaged");
      expect(await store.getRun("l1")).toMatchObject({ value: { status: "suspended" } });
      const forced = await resumedToItsStop(await control.act("l1", { answers, force: true }));
      expect(forced.status).toBe("done");
    },
  );

  it.skipIf(skip)("without a way to resume runs, refuses a run no live process owns", async () => {
    const { store } = await fresh();
    await parked(store, planOnly, "n1");
    const refused = await createRunControl({ store }).send("n1", { type: "CANCEL" });
    expect(refused.ok ? undefined : refused.error.code).toBe("Session/RunNotLive");
    const unknown = await createRunControl({ store }).send("nobody", { type: "CANCEL" });
    expect(unknown.ok ? undefined : unknown.error.code).toBe("Session/RunNotFound");
  });

  it.skipIf(skip)(
    "hands a control event to the process that owns the run, which applies it",
    async () => {
      const { store, another } = await fresh();
      const owner = await liveOn(await another(), "l1");
      const handedOver: string[] = [];
      // The prepare is never called: the live owner applies the event.
      const control = createRunControl({
        store,
        by: "ops",
        handingOver: (runId, event) => handedOver.push(`${runId} ${event.type}`),
        prepare: async () => {
          throw new Error("a live run is not resumed here");
        },
      });
      const applied = await control.send("l1", { type: "OVERRIDE", to: "publish", reason: "go" });
      expect(applied).toMatchObject({ ok: true, value: { outcome: "applied", runId: "l1" } });
      expect(handedOver).toEqual(["l1 OVERRIDE"]);
      expect((await owner.result).status).toBe("done");
      const audit = await store.auditOf("l1");
      expect(audit.find((e) => e.type === "ControlRequested")?.payload).toMatchObject({
        control: { type: "OVERRIDE", to: "publish" },
        requestedBy: { by: "ops", pid: process.pid },
      });
    },
  );

  it.skipIf(skip)("passes the owner's refusal back, and the run goes on", async () => {
    const { store, another } = await fresh();
    const owner = await liveOn(await another(), "l2");
    const refused = await createRunControl({ store }).send("l2", {
      type: "OVERRIDE",
      to: "nowhere",
      reason: "why not",
    });
    expect(refused.ok ? undefined : refused.error.code).toBe("Session/IllegalTransition");
    expect(await store.getRun("l2")).toMatchObject({ value: { status: "running" } });
    const cancelled = await createRunControl({ store }).send("l2", { type: "CANCEL" });
    expect(cancelled).toMatchObject({ ok: true, value: { outcome: "applied" } });
    expect((await owner.result).status).toBe("cancelled");
  });
});
