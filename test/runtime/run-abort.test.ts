import { join } from "node:path";
import type { LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { parseScript } from "../../src/models/script-file.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import type { ModelHandle } from "../../src/models/types.js";
import { type RunHandle, resumeRun, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { CODE_REVIEW_SCRIPT, codeReviewScriptOf, llm, pipelineOf } from "../support/pipelines.js";
import { harness, modelHarness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

const codeReview = () =>
  pipelineOf({
    id: "code-review",
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });

function openStore(file = join(tempDir(), "runs.db")): SqliteStore {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

function handleOf(launched: Awaited<ReturnType<typeof startRun>>): RunHandle {
  if (!launched.ok) throw launched.error;
  return launched.value;
}

/** The code-review script's model, whose `hangAt`-th call (from 1) waits until it is aborted. */
function modelHanging(hangAt: number, script = CODE_REVIEW_SCRIPT) {
  const parsed = parseScript(script, "test.script.yaml");
  if (!parsed.ok) throw new Error("script");
  const scripted = createScriptedModel(parsed.value);
  let hung = () => {};
  const hanging = new Promise<void>((resolve) => {
    hung = resolve;
  });
  const seen = { calls: 0, aborted: false, hanging };
  const answer = (options: LanguageModelV3CallOptions) => {
    seen.calls += 1;
    if (seen.calls !== hangAt) return scripted.model.doGenerate(options);
    hung();
    return new Promise<never>((_, reject) =>
      options.abortSignal?.addEventListener("abort", () => {
        seen.aborted = true;
        reject(options.abortSignal?.reason);
      }),
    );
  };
  const model: ModelHandle = { ...scripted, model: { ...scripted.model, doGenerate: answer } };
  return { model, seen };
}

describe("a run given an AbortSignal", () => {
  it("aborted while a model call waits: the call is aborted, the run ends cancelled and is stored so", async () => {
    const { model, seen } = modelHanging(2);
    const store = openStore();
    const controller = new AbortController();
    const run = handleOf(
      await startRun(codeReview(), {
        host: modelHarness(model).host,
        store,
        runId: "r1",
        task: "t",
        signal: controller.signal,
      }),
    );
    await seen.hanging;
    controller.abort();
    const result = await run.result;

    expect(result).toMatchObject({
      status: "cancelled",
      error: { code: "Cancellation/RunCancelled" },
    });
    expect(seen.aborted).toBe(true);
    expect(seen.calls).toBe(2);
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "cancelled" } });
    expect(store.auditOf("r1").at(-1)?.type).toBe("RunCancelled");
  });

  it("aborted already: the run is cancelled before its first step, no model is asked", async () => {
    const { model, seen } = modelHanging(1);
    const store = openStore();
    const run = handleOf(
      await startRun(codeReview(), {
        host: modelHarness(model).host,
        store,
        runId: "r1",
        task: "t",
        signal: AbortSignal.abort("the user left"),
      }),
    );
    const result = await run.result;

    expect(result).toMatchObject({ status: "cancelled", results: {} });
    expect(seen.calls).toBe(0);
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "cancelled" } });
    const types = store.auditOf("r1").map((e) => e.type);
    expect(types[0]).toBe("RunStarted");
    expect(types.at(-1)).toBe("RunCancelled");
    expect(types).not.toContain("ModelTurn");
  });

  it("on a run without a store, the same: aborting ends it cancelled", async () => {
    const { model, seen } = modelHanging(1);
    const h = modelHarness(model);
    const controller = new AbortController();
    const run = handleOf(
      await startRun(codeReview(), {
        host: h.host,
        runId: "r1",
        task: "t",
        signal: controller.signal,
      }),
    );
    await seen.hanging;
    controller.abort(new Error("shutting down"));
    expect(await run.result).toMatchObject({ status: "cancelled" });
    expect(h.audit.of("r1").at(-1)?.type).toBe("RunCancelled");
  });

  it("resumeRun: an aborted signal cancels the suspended run it resumes, and one aborted later the run it goes on with", async () => {
    const file = join(tempDir(), "runs.db");
    const pipeline = pipelineOf({ id: "plan-only", stages: [llm("plan")] });
    const suspending = () => harness(codeReviewScriptOf("plan"), { unansweredGrants: "suspend" });
    for (const id of ["r1", "r2"]) {
      const parked = handleOf(
        await startRun(pipeline, {
          host: suspending().host,
          store: openStore(file),
          runId: id,
          task: "t",
        }),
      );
      expect((await parked.result).status).toBe("suspended");
    }

    const already = handleOf(
      await resumeRun(pipeline, "r1", {
        host: suspending().host,
        store: openStore(file),
        signal: AbortSignal.abort(),
      }),
    );
    expect(await already.result).toMatchObject({ status: "cancelled" });

    // Resumed, r2's grant is denied and its next model call hangs: the run is live when aborted.
    const controller = new AbortController();
    const { model, seen } = modelHanging(1, codeReviewScriptOf("plan"));
    const later = handleOf(
      await resumeRun(pipeline, "r2", {
        host: modelHarness(model, { unansweredGrants: "deny" }).host,
        store: openStore(file),
        signal: controller.signal,
      }),
    );
    await seen.hanging;
    controller.abort();
    expect(await later.result).toMatchObject({ status: "cancelled" });

    const store = openStore(file);
    for (const id of ["r1", "r2"]) {
      expect(store.getRun(id)).toMatchObject({ ok: true, value: { status: "cancelled" } });
      expect(store.auditOf(id).at(-1)?.type).toBe("RunCancelled");
    }
  });
});
