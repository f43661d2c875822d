import { join } from "node:path";
import type { LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { type AnyActorRef, assign, createActor, sendTo, setup, toPromise } from "xstate";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { parseScript } from "../../src/models/script-file.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import type { ModelHandle } from "../../src/models/types.js";
import { compilePipeline, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { CODE_REVIEW_SCRIPT, code, llm, pipelineOf, waits } from "../support/pipelines.js";
import { harness, modelHarness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

function openStore(file: string): SqliteStore {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

/**
 * The scripted code-review model, telling each call's stage and the roles of its messages. A
 * call `onCall` answers `"hang"` for is never answered: the process is gone before it is.
 */
function recordingModel(
  onCall: (call: { stage: string; roles: string[] }) => "hang" | undefined,
): ModelHandle {
  const parsed = parseScript(CODE_REVIEW_SCRIPT, "test.script.yaml");
  if (!parsed.ok) throw new Error("script");
  const scripted = createScriptedModel(parsed.value);
  const told = (options: LanguageModelV3CallOptions) =>
    onCall({
      stage: String(options.providerOptions?.stagechart?.stageId),
      roles: options.prompt.map((message) => message.role),
    });
  return {
    ...scripted,
    model: {
      ...scripted.model,
      doGenerate: (options) =>
        told(options) === "hang" ? never(options) : scripted.model.doGenerate(options),
      doStream: (options) =>
        told(options) === "hang" ? never(options) : scripted.model.doStream(options),
    },
  };
}

/** A model call that ends only when it is aborted. */
const never = ({ abortSignal }: LanguageModelV3CallOptions) =>
  new Promise<never>((_, reject) =>
    abortSignal?.addEventListener("abort", () => reject(abortSignal.reason)),
  );

const codeReview = (): PipelineDefinition =>
  pipelineOf({
    id: "code-review",
    context: { type: "object", required: ["task"], properties: { task: { type: "string" } } },
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });

/** Someone else's app: it invokes the pipeline as its child `review` and keeps its output. */
function appInvoking(pipeline: PipelineDefinition, host: Parameters<typeof compilePipeline>[1]) {
  return setup({
    types: {} as {
      context: { ctx: Record<string, unknown>; outcome?: unknown; failure?: unknown };
      input: { ctx?: Record<string, unknown> } | undefined;
    },
    actors: { review: compilePipeline(pipeline, host) },
  }).createMachine({
    context: ({ input }) => ({ ctx: input?.ctx ?? { task: "rename auth" } }),
    initial: "reviewing",
    states: {
      reviewing: {
        invoke: {
          id: "review",
          src: "review",
          input: ({ context }) => ({ runId: "embedded-1", ctx: context.ctx }),
          onDone: { target: "finished", actions: assign({ outcome: ({ event }) => event.output }) },
          onError: { target: "broken", actions: assign({ failure: ({ event }) => event.error }) },
        },
      },
      finished: { type: "final" },
      broken: { type: "final" },
    },
  });
}

describe("a pipeline embedded in another app, on a host with a store", () => {
  it("continues in a fresh process with its whole conversation, repeating no recorded call", async () => {
    const file = join(tempDir(), "runs.db");
    const first: { stage: string; roles: string[] }[] = [];
    let persisted: unknown;
    let saved = () => {};
    const hasSaved = new Promise<void>((resolve) => {
      saved = resolve;
    });
    const before = modelHarness(
      recordingModel((call) => {
        first.push(call);
        if (first.length < 5) return undefined;
        // Execute's second model call has started: the app saves itself, and is gone.
        persisted = app.getPersistedSnapshot();
        saved();
        return "hang";
      }),
      { store: openStore(file) },
    );
    const app = createActor(appInvoking(codeReview(), before.host), { input: undefined });
    app.start();
    await hasSaved;
    app.stop();

    const second: { stage: string; roles: string[] }[] = [];
    const after = modelHarness(
      recordingModel((call) => {
        second.push(call);
        return undefined;
      }),
      { store: openStore(file) },
    );
    // The same project: the restored run goes on with the files as the first process left them.
    const host = { ...after.host, root: before.host.root };
    const restored = createActor(appInvoking(codeReview(), host), {
      snapshot: persisted as never,
      input: undefined,
    });
    restored.start();
    await toPromise(restored);

    expect(restored.getSnapshot().context.outcome).toMatchObject({ status: "done" });
    // Only the call in flight when the app saved itself, then review: nothing recorded again.
    expect(second.map((c) => c.stage)).toEqual(["execute", "review"]);
    expect(second[0]?.roles).toEqual(first[4]?.roles);
    expect(second[0]?.roles).toEqual(["system", "user", "assistant", "tool"]);
    const store = openStore(file);
    expect(store.getRun("embedded-1")).toMatchObject({ ok: true, value: { status: "done" } });
    const types = store.auditOf("embedded-1").map((e) => e.type);
    expect(types[0]).toBe("RunStarted");
    expect(types.at(-1)).toBe("RunCompleted");
    expect(types.filter((t) => t === "RunStarted")).toHaveLength(1);
  });

  it("startRun on that host is durable without being given the store", async () => {
    const store = openStore(join(tempDir(), "runs.db"));
    const h = harness(CODE_REVIEW_SCRIPT, { store });
    const started = await startRun(codeReview(), { host: h.host, task: "t", runId: "r1" });
    if (!started.ok) throw started.error;
    await started.value.result;
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "done" } });
    expect(store.auditOf("r1").at(-1)?.type).toBe("RunCompleted");
  });
});

describe("a pipeline embedded in another app", () => {
  it("refuses a ctx its context schema rejects: the app's invoke fails with the code, nothing is stored", async () => {
    const store = openStore(join(tempDir(), "runs.db"));
    const h = harness(CODE_REVIEW_SCRIPT, { store });
    const app = createActor(appInvoking(codeReview(), h.host), { input: { ctx: { task: 7 } } });
    app.start();
    await toPromise(app);
    expect(app.getSnapshot().value).toBe("broken");
    expect(app.getSnapshot().context.failure).toMatchObject({
      code: "Validation/RunContextInvalid",
    });
    expect(store.getRun("embedded-1").ok).toBe(false);
  });

  it("audits its start and end in the host's audit log", async () => {
    const h = harness(CODE_REVIEW_SCRIPT);
    const app = createActor(appInvoking(codeReview(), h.host), { input: undefined });
    app.start();
    await toPromise(app);
    const types = h.audit.of("embedded-1").map((e) => e.type);
    expect(types[0]).toBe("RunStarted");
    expect(h.audit.of("embedded-1")[0]?.payload).toMatchObject({
      pipelineId: "code-review",
      ctx: { task: "rename auth" },
    });
    expect(types.at(-1)).toBe("RunCompleted");
  });

  it("a refused OVERRIDE sent with sendTo is emitted and audited, and the run goes on", async () => {
    const h = harness("stages: {}");
    const pipeline = pipelineOf({
      id: "inner-work",
      stages: [waits("draft", 60_000), code("publish", () => ({ verdict: "ok" }))],
      next: { draft: "publish" },
    });
    const app = setup({
      types: {} as { events: { type: "JUMP"; to: string } },
      actors: { work: compilePipeline(pipeline, h.host) },
    }).createMachine({
      invoke: { id: "work", src: "work", input: { runId: "embedded-2", ctx: {} } },
      on: {
        JUMP: {
          actions: sendTo("work", ({ event }) => ({
            type: "OVERRIDE" as const,
            to: event.to,
            reason: "asked by the app",
          })),
        },
      },
    });
    const actor = createActor(app);
    actor.start();
    const work = actor.getSnapshot().children.work as AnyActorRef;
    const emitted: unknown[] = [];
    work.on("stagechart.controlRefused", (event) => emitted.push(event));
    actor.send({ type: "JUMP", to: "nowhere" });

    expect(emitted).toEqual([
      expect.objectContaining({
        control: { type: "OVERRIDE", to: "nowhere", reason: "asked by the app" },
        error: expect.objectContaining({ code: "Session/IllegalTransition" }),
      }),
    ]);
    expect(h.audit.of("embedded-2").find((e) => e.type === "RequestRefused")).toMatchObject({
      payload: {
        control: { type: "OVERRIDE", to: "nowhere" },
        error: { code: "Session/IllegalTransition" },
      },
    });
    expect(work.getSnapshot().context.current).toBe("draft");
    actor.send({ type: "JUMP", to: "publish" });
    await toPromise(work);
    expect(work.getSnapshot().output).toMatchObject({ status: "done" });
    actor.stop();
  });
});
