import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { assign, createActor, setup, toPromise, waitFor } from "xstate";
import { siblingState } from "../../src/compiler/pipeline-parallel.js";
import { lookup } from "../../src/compiler/stage-table.js";
import type { StageResult } from "../../src/definitions/contract.js";
import type { PipelineStage } from "../../src/definitions/pipeline-types.js";
import { isModelDelta, type RunEvent } from "../../src/events/run-events.js";
import { EventFeed } from "../../src/runtime/event-feed.js";
import { callbackInteractor } from "../../src/runtime/interactors.js";
import { compilePipeline, type RunHandle, startRun } from "../../src/runtime/run.js";
import { bashConfinement, DEFAULT_SANDBOX } from "../../src/tools/bash-sandbox.js";
import { CODE_REVIEW_SCRIPT, code, llm, pipelineOf, waits } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { liveActor } from "./support/live-actor.js";

const codeReview = () =>
  pipelineOf({
    id: "code-review",
    context: { type: "object", required: ["task"], properties: { task: { type: "string" } } },
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: {
      plan: "execute",
      execute: "review",
      review: {
        kind: "rules",
        rules: [
          { when: { path: "output.approved", op: "equals", value: true }, to: "done" },
          { when: { visits: "review", op: "lt", value: 3 }, to: "execute" },
          { to: "fail" },
        ],
      },
    },
  });

function started(handle: Awaited<ReturnType<typeof startRun>>): RunHandle {
  if (!handle.ok) throw handle.error;
  return handle.value;
}

const transitions = (events: { type: string; payload: Record<string, unknown> }[]) =>
  events
    .filter((e) => e.type === "SMTransition")
    .map((e) => `${e.payload.kind}:${String(e.payload.from)}->${String(e.payload.to)}`);

describe("a pipeline run", () => {
  it("runs the code-review pipeline Plan → Execute → Review to done", async () => {
    const h = harness(CODE_REVIEW_SCRIPT, {
      interactors: [callbackInteractor("user", () => "deny")],
    });
    const run = started(
      await startRun(codeReview(), { host: h.host, task: "refactor auth module", runId: "run-1" }),
    );
    const result = await run.result;

    expect(result).toMatchObject({ runId: "run-1", status: "done", output: { approved: true } });
    expect(Object.keys(result.results)).toEqual(["plan", "execute", "review"]);
    const events = h.audit.of("run-1");
    expect(events[0]).toMatchObject({
      type: "RunStarted",
      payload: { pipelineId: "code-review", ctx: { task: "refactor auth module" } },
    });
    expect(events.at(-1)).toMatchObject({ type: "RunCompleted", payload: { status: "done" } });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(transitions(events)).toEqual([
      "sequential:plan->execute",
      "sequential:execute->review",
      "terminal:review->done",
    ]);
    const plan = events.filter((e) => e.stageId === "plan").map((e) => e.type);
    expect(plan).toEqual([
      "StageSetup",
      "StageInit",
      "CheckGateOutcome",
      "ModelTurn",
      "ToolProposed",
      "GrantRequested",
      "ToolDenied",
      "ModelTurn",
      "ToolProposed",
      "ToolApproved",
      "ToolSucceeded",
      "ModelTurn",
      "StageAssertOutcome",
      "StageExited",
    ]);
    expect(readFileSync(join(h.root, "src/auth.ts"), "utf8")).toContain(
      "export const authentication",
    );
  });

  it("hands each stage its predecessor's result as ctx.upstream", async () => {
    const h = harness(CODE_REVIEW_SCRIPT);
    const run = started(await startRun(codeReview(), { host: h.host, task: "t", runId: "run-1" }));
    await run.result;
    const executePrompt = run.transcript("run-1/execute/1")[0];
    expect(executePrompt).toMatchObject({
      role: "system",
      text: expect.stringContaining("Summary: Split the module"),
    });
    const reviewPrompt = run.transcript("run-1/review/1")[0];
    expect(reviewPrompt).toMatchObject({
      text: expect.stringContaining('"summary": "Renamed auth"'),
    });
  });

  it("refuses a ctx that does not match the pipeline's context schema, before anything runs", async () => {
    const h = harness(CODE_REVIEW_SCRIPT);
    const refused = await startRun(codeReview(), { host: h.host, ctx: { task: 42 } });
    expect(refused.ok ? undefined : refused.error.code).toBe("Validation/RunContextInvalid");
    expect(h.audit.events).toEqual([]);
  });

  it("loops back on a guarded rule, bounded by visits, and fails when the rules say so", async () => {
    const h = harness("stages: {}");
    const reviews: number[] = [];
    const pipeline = pipelineOf({
      stages: [
        code("execute", () => ({ verdict: "ok", output: { diff: "d" } })),
        code("review", ({ ctx }) => {
          reviews.push(ctx.upstream.length);
          return { verdict: "ok", output: { approved: false } };
        }),
      ],
      next: {
        execute: "review",
        review: {
          kind: "rules",
          rules: [
            { when: { path: "output.approved", op: "equals", value: true }, to: "done" },
            { when: { visits: "review", op: "lt", value: 3 }, to: "execute" },
            { to: "fail" },
          ],
        },
      },
    });
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(result.status).toBe("failed");
    expect(result.error?.code).toBe("Validation/PipelineFailedByRule");
    expect(reviews).toEqual([1, 1, 1]);
    expect(transitions(h.audit.of("run-1"))).toEqual([
      "sequential:execute->review",
      "sequential:review->execute",
      "sequential:execute->review",
      "sequential:review->execute",
      "sequential:execute->review",
      "terminal:review->fail",
    ]);
    const reviewExecutions = h.audit
      .of("run-1")
      .filter((e) => e.type === "StageSetup" && e.stageId === "review")
      .map((e) => e.stageExecutionId);
    expect(reviewExecutions).toEqual(["run-1/review/1", "run-1/review/2", "run-1/review/3"]);
  });

  it("fails when a stage fails and no rule routes its failure", async () => {
    const h = harness(`
stages:
  plan:
    - { error: "bad request", status: 400 }
`);
    const result = await started(
      await startRun(codeReview(), { host: h.host, task: "t", runId: "run-1" }),
    ).result;
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({
      code: "ExtensionHost/ProviderRejected",
      context: { stageId: "plan" },
    });
    expect(transitions(h.audit.of("run-1"))).toEqual(["terminal:plan->fail"]);
  });

  it("lets a rule that tests the verdict route a failure", async () => {
    const h = harness("stages: {}");
    const pipeline = pipelineOf({
      stages: [
        code("build", () => ({ verdict: "fail", reason: "compile error" })),
        code("repair", () => ({ verdict: "ok" })),
      ],
      next: {
        build: {
          kind: "rules",
          rules: [
            { when: { path: "verdict", op: "equals", value: "fail" }, to: "repair" },
            { to: "done" },
          ],
        },
      },
    });
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(result.status).toBe("done");
    expect(result.results.build?.verdict).toBe("fail");
    expect(result.results.repair?.verdict).toBe("ok");
  });

  it("decides with named TypeScript guards", async () => {
    const h = harness("stages: {}");
    const pipeline = pipelineOf({
      stages: [
        code("count", () => ({ verdict: "ok", output: { n: 7 } })),
        code("big", () => ({ verdict: "ok" })),
        code("small", () => ({ verdict: "ok" })),
      ],
      guards: { isBig: ({ output }) => (output as { n: number }).n > 5 },
      next: {
        count: { kind: "rules", rules: [{ when: { guard: "isBig" }, to: "big" }, { to: "small" }] },
      },
    });
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(Object.keys(result.results)).toEqual(["count", "big"]);
  });
});

describe("parallel groups", () => {
  const fanOut = (
    policy: Parameters<typeof pipelineOf>[0]["next"],
    stages: Parameters<typeof pipelineOf>[0]["stages"],
  ) => pipelineOf({ stages, next: policy });

  it("fail-fast: a failing sibling stops the others mid-call and the join never starts", async () => {
    const h = harness(`
stages:
  lint:
    - { delayMs: 5000, tool: submit_lint, args: { clean: true } }
`);
    const pipeline = fanOut(
      {
        start: {
          kind: "parallel",
          siblings: ["test", "lint"],
          join: "join",
          policy: { kind: "fail-fast" },
        },
      },
      [
        code("start", () => ({ verdict: "ok" })),
        waits("test", 30, "fail"),
        llm("review"),
        code("join", () => ({ verdict: "ok" })),
      ],
    );
    pipeline.stages.lint = {
      kind: "llm",
      id: "lint",
      definition: {
        ...(
          pipeline.stages.review as {
            kind: "llm";
            definition: import("../../src/definitions/stage.js").StageDefinition;
          }
        ).definition,
        id: "lint",
        completionTool: "submit_lint",
        completionSchema: { type: "object", properties: { clean: { type: "boolean" } } },
        inputsSchema: undefined,
        template: { parts: [{ kind: "text", text: "Lint it." }], ctxReferences: [] },
      },
    };
    delete pipeline.stages.review;
    const started_ = Date.now();
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(Date.now() - started_).toBeLessThan(2000);
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({
      code: "ExtensionHost/ParallelSiblingFailure",
      context: { sibling: "test" },
    });
    expect(result.results.join).toBeUndefined();
    const events = h.audit.of("run-1");
    expect(events.find((e) => e.type === "ParallelSiblingFailure")?.payload).toMatchObject({
      failed: ["test"],
    });
    expect(events.find((e) => e.type === "StageCancelled")).toMatchObject({
      stageId: "lint",
      stageExecutionId: "run-1/lint/1",
    });
    expect(events.filter((e) => e.stageId === "lint").map((e) => e.type)).not.toContain(
      "StageAssertOutcome",
    );
    expect(events.some((e) => e.stageId === "join")).toBe(false);
  });

  it("fail-fast: a sibling whose verdict is skip is a failed sibling, and the join never runs", async () => {
    const h = harness("stages: {}");
    let joinRan = false;
    const pipeline = fanOut(
      {
        start: {
          kind: "parallel",
          siblings: ["a", "b"],
          join: "join",
          policy: { kind: "fail-fast" },
        },
      },
      [
        code("start", () => ({ verdict: "ok" })),
        code("a", () => ({ verdict: "skip", reason: "nothing to check" })),
        waits("b", 10),
        code("join", () => {
          joinRan = true;
          return { verdict: "ok" };
        }),
      ],
    );
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(result.status).toBe("failed");
    expect(result.error).toMatchObject({
      code: "ExtensionHost/ParallelSiblingFailure",
      context: { sibling: "a", failed: ["a"] },
    });
    expect(joinRan).toBe(false);
    expect(h.audit.of("run-1").some((e) => e.stageId === "join")).toBe(false);
  });

  it("hands the join one upstream element per sibling, in declared order", async () => {
    const h = harness("stages: {}");
    let joined: StageResult[] = [];
    const pipeline = fanOut(
      {
        start: {
          kind: "parallel",
          siblings: ["a", "b", "c"],
          join: "join",
          policy: { kind: "fail-fast" },
        },
      },
      [
        code("start", () => ({ verdict: "ok" })),
        waits("a", 40),
        waits("b", 5),
        waits("c", 20),
        code("join", ({ ctx }) => {
          joined = [...ctx.upstream];
          return { verdict: "ok" };
        }),
      ],
    );
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(result.status).toBe("done");
    expect(joined.map((r) => r.stageId)).toEqual(["a", "b", "c"]);
    expect(transitions(h.audit.of("run-1"))).toEqual([
      "parallel:start->a,b,c",
      "join:a,b,c->join",
      "terminal:join->done",
    ]);
  });

  it("all-settled: waits for every sibling; the join sees failures too", async () => {
    const h = harness("stages: {}");
    let joined: string[] = [];
    const pipeline = fanOut(
      {
        start: {
          kind: "parallel",
          siblings: ["a", "b"],
          join: "join",
          policy: { kind: "all-settled" },
        },
      },
      [
        code("start", () => ({ verdict: "ok" })),
        waits("a", 5, "fail"),
        waits("b", 30),
        code("join", ({ ctx }) => {
          joined = ctx.upstream.map((r) => `${r.stageId}:${r.verdict}`);
          return { verdict: "ok" };
        }),
      ],
    );
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(result.status).toBe("done");
    expect(joined).toEqual(["a:fail", "b:ok"]);
  });

  it("any: the first sibling to succeed wins and the others are cancelled", async () => {
    const h = harness("stages: {}");
    let joined: string[] = [];
    const pipeline = fanOut(
      {
        start: {
          kind: "parallel",
          siblings: ["slow", "fast"],
          join: "join",
          policy: { kind: "any" },
        },
      },
      [
        code("start", () => ({ verdict: "ok" })),
        waits("slow", 5000),
        waits("fast", 10),
        code("join", ({ ctx }) => {
          joined = ctx.upstream.map((r) => r.stageId);
          return { verdict: "ok" };
        }),
      ],
    );
    const began = Date.now();
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(Date.now() - began).toBeLessThan(2000);
    expect(result.status).toBe("done");
    expect(joined).toEqual(["fast"]);
    expect(h.audit.of("run-1").find((e) => e.type === "StageCancelled")?.stageId).toBe("slow");
  });

  it("any: fails when no sibling succeeds", async () => {
    const h = harness("stages: {}");
    const pipeline = fanOut(
      { start: { kind: "parallel", siblings: ["a", "b"], join: "done", policy: { kind: "any" } } },
      [code("start", () => ({ verdict: "ok" })), waits("a", 5, "fail"), waits("b", 10, "fail")],
    );
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(result.error?.code).toBe("ExtensionHost/ParallelPolicyUnmet");
  });

  it("quorum: joins once k siblings succeed, fails once k can no longer be reached", async () => {
    const h = harness("stages: {}");
    const quorum = (verdicts: ("ok" | "fail")[]) =>
      fanOut(
        {
          start: {
            kind: "parallel",
            siblings: ["a", "b", "c"],
            join: "done",
            policy: { kind: "quorum", k: 2 },
          },
        },
        [
          code("start", () => ({ verdict: "ok" })),
          waits("a", 5, verdicts[0]),
          waits("b", 10, verdicts[1]),
          waits("c", 3000, verdicts[2]),
        ],
      );
    const reached = await started(
      await startRun(quorum(["ok", "ok", "ok"]), { host: h.host, runId: "run-q1" }),
    ).result;
    expect(reached.status).toBe("done");
    expect(reached.results.c).toBeUndefined();
    const missed = await started(
      await startRun(quorum(["fail", "fail", "ok"]), { host: h.host, runId: "run-q2" }),
    ).result;
    expect(missed.error?.code).toBe("ExtensionHost/ParallelPolicyUnmet");
  });

  it("maxConcurrency: never more siblings running than the cap", async () => {
    const h = harness("stages: {}");
    let running = 0;
    let peak = 0;
    const tracked = (id: string) =>
      code(id, async () => {
        running += 1;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setTimeout(resolve, 15));
        running -= 1;
        return { verdict: "ok" };
      });
    const siblings = ["a", "b", "c", "d", "e"];
    const pipeline = fanOut(
      {
        start: {
          kind: "parallel",
          siblings,
          join: "done",
          policy: { kind: "fail-fast" },
          maxConcurrency: 2,
        },
      },
      [code("start", () => ({ verdict: "ok" })), ...siblings.map(tracked)],
    );
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(result.status).toBe("done");
    expect(Object.keys(result.results).sort()).toEqual(["a", "b", "c", "d", "e", "start"]);
    expect(peak).toBe(2);
  });

  it("siblings get the pre-fan-out ctx and empty upstream", async () => {
    const h = harness("stages: {}");
    const seen: unknown[] = [];
    const pipeline = fanOut(
      {
        start: {
          kind: "parallel",
          siblings: ["a", "b"],
          join: "done",
          policy: { kind: "fail-fast" },
        },
      },
      [
        code("start", () => ({ verdict: "ok", output: { x: 1 } })),
        code("a", ({ ctx }) => {
          seen.push([ctx.task, ctx.upstream.length]);
          return { verdict: "ok" };
        }),
        code("b", ({ ctx }) => {
          seen.push([ctx.task, ctx.upstream.length]);
          return { verdict: "ok" };
        }),
      ],
    );
    await started(await startRun(pipeline, { host: h.host, runId: "run-1", task: "t" })).result;
    expect(seen).toEqual([
      ["t", 0],
      ["t", 0],
    ]);
  });
});

describe("sub-pipelines and code stages", () => {
  it("runs sub-pipelines two levels deep as nested child actors", async () => {
    const h = harness("stages: {}");
    const inner = pipelineOf({
      id: "inner",
      stages: [code("deepest", () => ({ verdict: "ok", output: { depth: 2 } }))],
    });
    const middle = pipelineOf({
      id: "middle",
      stages: [
        { kind: "pipeline", id: "inner-stage", pipeline: inner },
        code("after-inner", ({ ctx }) => ({
          verdict: "ok",
          output: ctx.upstream[0]?.output ?? null,
        })),
      ],
      next: { "inner-stage": "after-inner" },
    });
    const outer = pipelineOf({
      id: "outer",
      stages: [
        { kind: "pipeline", id: "middle-stage", pipeline: middle },
        code("last", ({ ctx }) => ({ verdict: "ok", output: ctx.upstream[0]?.output ?? null })),
      ],
      next: { "middle-stage": "last" },
    });
    const result = await started(await startRun(outer, { host: h.host, runId: "run-1" })).result;
    expect(result).toMatchObject({ status: "done", output: { depth: 2 } });
    expect(result.results["middle-stage"]).toMatchObject({
      verdict: "ok",
      stageExecutionId: "run-1/middle-stage/1",
    });
    const deepest = h.audit.of("run-1").find((e) => e.stageId === "deepest");
    expect(deepest?.stageExecutionId).toBe("run-1/middle-stage/1/inner-stage/1/deepest/1");
  });

  it("a sub-pipeline's entry receives its stage's upstream: the result before it", async () => {
    const h = harness("stages: {}");
    const seen: unknown[] = [];
    const inner = pipelineOf({
      id: "inner",
      stages: [
        code("inner-entry", ({ ctx }) => {
          seen.push(ctx.upstream.map((result) => [result.stageId, result.output]));
          return { verdict: "ok", output: { entry: "inner" } };
        }),
        code("inner-next", ({ ctx }) => {
          seen.push(ctx.upstream.map((result) => result.stageId));
          return { verdict: "ok", output: { entry: "inner" } };
        }),
      ],
      next: { "inner-entry": "inner-next" },
    });
    const outer = pipelineOf({
      id: "outer",
      stages: [
        code("first", () => ({ verdict: "ok", output: { from: "first" } })),
        { kind: "pipeline", id: "sub", pipeline: inner },
        code("last", ({ ctx }) => ({ verdict: "ok", output: ctx.upstream[0]?.output ?? null })),
      ],
      next: { first: "sub", sub: "last" },
    });
    const result = await started(await startRun(outer, { host: h.host, runId: "run-1" })).result;
    expect(result).toMatchObject({ status: "done", output: { entry: "inner" } });
    expect(seen).toEqual([[["first", { from: "first" }]], ["inner-entry"]]);
    const setup = h.audit
      .of("run-1")
      .find((e) => e.type === "StageSetup" && e.stageId === "inner-entry");
    expect(setup?.payload).toMatchObject({ upstream: 1 });
  });

  it("a sub-pipeline used as a join hands the siblings' results to its entry; one as a sibling, none", async () => {
    const h = harness("stages: {}");
    const seen: Record<string, string[]> = {};
    const inner = (id: string) =>
      pipelineOf({
        id,
        stages: [
          code(`${id}-entry`, ({ ctx }) => {
            seen[id] = ctx.upstream.map((result) => result.stageId);
            return { verdict: "ok" };
          }),
        ],
      });
    const outer = pipelineOf({
      id: "outer",
      stages: [
        code("fan", () => ({ verdict: "ok" })),
        code("a", () => ({ verdict: "ok", output: "a" })),
        { kind: "pipeline", id: "b", pipeline: inner("sibling") },
        { kind: "pipeline", id: "joined", pipeline: inner("join") },
      ],
      next: {
        fan: {
          kind: "parallel",
          siblings: ["a", "b"],
          join: "joined",
          policy: { kind: "all-settled" },
        },
      },
    });
    const result = await started(await startRun(outer, { host: h.host, runId: "run-1" })).result;
    expect(result.status).toBe("done");
    expect(seen).toEqual({ sibling: [], join: ["a", "b"] });
  });

  it("an LLM entry of a sub-pipeline renders {{ctx.upstream[0].output.*}} from the stage before", async () => {
    const h = harness(`
stages:
  plan:
    - tool: submit_plan
      args: { summary: "Split the module", steps: ["extract"] }
  execute:
    - tool: submit_diff
      args: { summary: "Renamed auth", files: [{ path: src/auth.ts, change: modified }] }
`);
    const inner = pipelineOf({ id: "inner", stages: [llm("execute")] });
    const outer = pipelineOf({
      id: "outer",
      stages: [llm("plan"), { kind: "pipeline", id: "sub", pipeline: inner }],
      next: { plan: "sub" },
    });
    const run = started(await startRun(outer, { host: h.host, runId: "run-1", task: "t" }));
    const result = await run.result;
    expect(result).toMatchObject({ status: "done", output: { summary: "Renamed auth" } });
    const [system] = run.transcript("run-1/sub/1/execute/1");
    expect(system).toMatchObject({ role: "system" });
    expect(system?.role === "system" && system.text).toContain("Summary: Split the module");
  });

  it("a failing sub-pipeline fails its stage", async () => {
    const h = harness("stages: {}");
    const inner = pipelineOf({
      id: "inner",
      stages: [code("boom", () => ({ verdict: "fail", reason: "nope" }))],
    });
    const outer = pipelineOf({
      id: "outer",
      stages: [{ kind: "pipeline", id: "sub", pipeline: inner }],
    });
    const result = await started(await startRun(outer, { host: h.host, runId: "run-1" })).result;
    expect(result.status).toBe("failed");
    expect(result.results.sub?.verdict).toBe("fail");
  });

  it("code stages call host tools under the security mode, then the guards", async () => {
    const calls: unknown[] = [];
    const stage = code("check", async ({ callTool }) => {
      calls.push(await callTool("Bash", { command: "echo hi" }));
      calls.push(await callTool("Write", { path: ".env", content: "x" }));
      return { verdict: "ok" };
    });
    const yolo = harness("stages: {}", { mode: "yolo", guards: ["Write(.env)"] });
    await started(
      await startRun(pipelineOf({ stages: [stage] }), { host: yolo.host, runId: "run-1" }),
    ).result;
    expect(calls).toMatchObject([
      { ok: true, output: { exitCode: 0, stdout: "hi\n" } },
      { ok: false, error: { code: "ToolTerminal/GuardDenied" } },
    ]);
    calls.length = 0;
    const headless = harness("stages: {}");
    await started(
      await startRun(pipelineOf({ stages: [stage] }), { host: headless.host, runId: "run-2" }),
    ).result;
    expect(calls).toMatchObject([
      { ok: false, error: { code: "ToolTerminal/NoInteractor" } },
      { ok: false, error: { code: "ToolTerminal/NoInteractor" } },
    ]);
    calls.length = 0;
    const allowlist = harness("stages: {}", { mode: "allowlist", allowlist: ["Bash(echo *)"] });
    await started(
      await startRun(pipelineOf({ stages: [stage] }), { host: allowlist.host, runId: "run-3" }),
    ).result;
    expect(calls).toMatchObject([
      { ok: true },
      { ok: false, error: { code: "ToolTerminal/NotOnAllowlist" } },
    ]);
  });

  it("a command stage runs through Bash: ok on exit 0, fail otherwise, with the output's tail", async () => {
    const h = harness("stages: {}", { mode: "yolo" });
    const pipeline = pipelineOf({
      stages: [
        { kind: "command", id: "passes", command: "echo fine", timeoutMs: 5000 },
        { kind: "command", id: "fails", command: "echo broken >&2; exit 3", timeoutMs: 5000 },
      ],
      next: { passes: "fails" },
    });
    const result = await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(result.results.passes).toMatchObject({
      verdict: "ok",
      output: { exitCode: 0, stdoutTail: "fine\n" },
    });
    expect(result.results.fails).toMatchObject({
      verdict: "fail",
      output: { exitCode: 3, stderrTail: "broken\n" },
    });
    expect(result.status).toBe("failed");
  });
});

describe("control events", () => {
  const slowChain = () =>
    pipelineOf({
      stages: [waits("one", 5000), waits("two", 10), waits("three", 10)],
      next: { one: "two", two: "three" },
    });

  it("OVERRIDE moves to a reachable stage, with the reason audited", async () => {
    const h = harness("stages: {}");
    const run = started(await startRun(slowChain(), { host: h.host, runId: "run-1" }));
    await waitFor(liveActor(run), (s) => s.context.current === "one");
    expect(run.send({ type: "OVERRIDE", to: "three", reason: "two is known good" }).ok).toBe(true);
    const result = await run.result;
    expect(result.status).toBe("done");
    expect(result.results.two).toBeUndefined();
    const events = h.audit.of("run-1");
    expect(events.find((e) => e.type === "OverrideApplied")?.payload).toMatchObject({
      from: "one",
      to: "three",
      reason: "two is known good",
    });
    expect(events.find((e) => e.type === "StageCancelled")?.stageId).toBe("one");
    expect(transitions(events)).toContain("override:one->three");
  });

  describe("the stage an override enters is told why, that execution only", () => {
    const PLANS = `
stages:
  plan:
    - tool: submit_plan
      args: { summary: "first", steps: [] }
    - tool: submit_plan
      args: { summary: "second", steps: [] }
`;
    const overridden = (plan = llm("plan")) =>
      pipelineOf({
        stages: [waits("one", 5000), waits("two", 10), plan],
        next: {
          one: "two",
          two: "plan",
          plan: {
            kind: "rules",
            rules: [{ when: { visits: "plan", op: "lt", value: 2 }, to: "plan" }, { to: "done" }],
          },
        },
      });
    const systemPrompt = (run: RunHandle, execution: string) => {
      const [entry] = run.transcript(execution);
      return entry?.role === "system" ? entry.text : "";
    };
    const overrideToPlan = async (h: ReturnType<typeof harness>, plan?: PipelineStage) => {
      const run = started(
        await startRun(overridden(plan), { host: h.host, runId: "run-1", task: "t" }),
      );
      await waitFor(liveActor(run), (s) => s.context.current === "one");
      expect(run.send({ type: "OVERRIDE", to: "plan", reason: "two is known good" }).ok).toBe(true);
      expect((await run.result).status).toBe("done");
      return run;
    };

    it("in its system prompt", async () => {
      const h = harness(PLANS);
      const run = await overrideToPlan(h);
      expect(systemPrompt(run, "run-1/plan/1")).toContain(
        "This stage was entered by an override from stage one. The reason given: two is known good",
      );
      expect(systemPrompt(run, "run-1/plan/2")).not.toContain("override");
    });

    it("as {{ctx.override.reason}} and {{ctx.override.from}}, empty in a stage no override entered", async () => {
      const h = harness(PLANS);
      const plan = llm("plan", (text) =>
        text.replace(
          "Task: {{ctx.task}}",
          "Task: {{ctx.task}}\nWhy: [{{ctx.override.reason}}] from [{{ctx.override.from}}]",
        ),
      );
      const run = await overrideToPlan(h, plan);
      const first = systemPrompt(run, "run-1/plan/1");
      expect(first).toContain("Why: [two is known good] from [one]");
      expect(first).not.toContain("This stage was entered by an override");
      expect(systemPrompt(run, "run-1/plan/2")).toContain("Why: [] from []");
    });

    it("as ctx.override of a code stage, and of a sub-pipeline's entry", async () => {
      const h = harness("stages: {}");
      const seen: Record<string, unknown> = {};
      const sees = (id: string) =>
        code(id, ({ ctx }) => {
          seen[`${ctx.workflowRunId} ${id}`] = ctx.override ?? null;
          return { verdict: "ok" };
        });
      const pipeline = pipelineOf({
        stages: [
          waits("one", 5000),
          sees("two"),
          sees("three"),
          {
            kind: "pipeline",
            id: "sub",
            pipeline: pipelineOf({ id: "inner", stages: [sees("inner-entry")] }),
          },
        ],
        next: { one: "two", two: "three", three: "sub" },
      });
      for (const [runId, to] of [
        ["run-1", "three"],
        ["run-2", "sub"],
      ] as const) {
        const run = started(await startRun(pipeline, { host: h.host, runId }));
        await waitFor(liveActor(run), (s) => s.context.current === "one");
        expect(run.send({ type: "OVERRIDE", to, reason: `skip to ${to}` }).ok).toBe(true);
        expect((await run.result).status).toBe("done");
      }
      expect(seen).toEqual({
        "run-1 three": { reason: "skip to three", from: "one" },
        "run-1 inner-entry": null,
        "run-2 inner-entry": { reason: "skip to sub", from: "one" },
      });
    });
  });

  it("OVERRIDE to a stage the topology cannot reach is Session/IllegalTransition", async () => {
    const h = harness("stages: {}");
    const run = started(await startRun(slowChain(), { host: h.host, runId: "run-1" }));
    await waitFor(liveActor(run), (s) => s.context.current === "one");
    const backwards = started(await startRun(slowChain(), { host: h.host, runId: "run-2" }));
    await waitFor(liveActor(backwards), (s) => s.context.current === "one");
    const refused = run.send({ type: "OVERRIDE", to: "nowhere", reason: "x" });
    expect(refused.ok ? undefined : refused.error.code).toBe("Session/IllegalTransition");
    const noReason = run.send({ type: "OVERRIDE", to: "three", reason: " " });
    expect(noReason.ok ? undefined : noReason.error.code).toBe("Validation/OverrideReasonMissing");
    run.send({ type: "CANCEL" });
    backwards.send({ type: "CANCEL" });
    await Promise.all([run.result, backwards.result]);
  });

  it("OVERRIDE to a join is refused while its fan-out has not completed (Q-4)", async () => {
    const h = harness("stages: {}");
    const fanOut = (startMs: number) =>
      pipelineOf({
        stages: [waits("start", startMs), waits("a", 5000), waits("b", 5000), waits("join", 5)],
        next: {
          start: {
            kind: "parallel",
            siblings: ["a", "b"],
            join: "join",
            policy: { kind: "fail-fast" },
          },
        },
      });
    const beforeGroup = started(await startRun(fanOut(5000), { host: h.host, runId: "run-1" }));
    await waitFor(liveActor(beforeGroup), (s) => s.context.current === "start");
    const inGroup = started(await startRun(fanOut(5), { host: h.host, runId: "run-2" }));
    await waitFor(liveActor(inGroup), (s) => siblingState(s.context, "start", "a") === "running");
    for (const run of [beforeGroup, inGroup]) {
      const refused = run.send({ type: "OVERRIDE", to: "join", reason: "skip the checks" });
      expect(refused.ok ? undefined : refused.error).toMatchObject({
        code: "Session/IllegalTransition",
        message: expect.stringContaining("join of a group whose siblings all succeeded"),
      });
      run.send({ type: "CANCEL" });
      const result = await run.result;
      expect(result.status).toBe("cancelled");
      expect(result.results.join).toBeUndefined();
    }
    expect(h.audit.events.some((e) => e.stageId === "join")).toBe(false);
  });

  it("REDO re-enters a stage with a new stage execution", async () => {
    const h = harness("stages: {}");
    let runsOfOne = 0;
    const pipeline = pipelineOf({
      stages: [
        code("one", () => {
          runsOfOne += 1;
          return { verdict: "ok" };
        }),
        waits("two", 5000),
        waits("three", 5),
      ],
      next: { one: "two", two: "three" },
    });
    const run = started(await startRun(pipeline, { host: h.host, runId: "run-1" }));
    await waitFor(liveActor(run), (s) => s.context.current === "two");
    const notYet = run.send({ type: "REDO", stage: "three" });
    expect(notYet.ok ? undefined : notYet.error.code).toBe("Session/IllegalTransition");
    expect(run.send({ type: "REDO", stage: "one" }).ok).toBe(true);
    await waitFor(
      liveActor(run),
      (s) => s.context.current === "two" && lookup(s.context.visits, "two") === 2,
    );
    run.send({ type: "CANCEL" });
    await run.result;
    expect(runsOfOne).toBe(2);
    const setups = h.audit
      .of("run-1")
      .filter((e) => e.type === "StageSetup" && e.stageId === "one");
    expect(setups.map((e) => e.stageExecutionId)).toEqual(["run-1/one/1", "run-1/one/2"]);
    expect(transitions(h.audit.of("run-1"))).toContain("redo:two->one");
  });

  it("CANCEL ends the run as cancelled and aborts the running stage", async () => {
    const h = harness("stages: {}");
    const run = started(await startRun(slowChain(), { host: h.host, runId: "run-1" }));
    await waitFor(liveActor(run), (s) => s.context.current === "one");
    const began = Date.now();
    run.send({ type: "CANCEL" });
    const result = await run.result;
    expect(Date.now() - began).toBeLessThan(500);
    expect(result).toMatchObject({
      status: "cancelled",
      error: { code: "Cancellation/RunCancelled" },
    });
    expect(
      h.audit
        .of("run-1")
        .map((e) => e.type)
        .slice(-2),
    ).toEqual(["StageCancelled", "RunCancelled"]);
  });

  it("streams each model reply's pieces before its turn's audit event, live only", async () => {
    const h = harness(CODE_REVIEW_SCRIPT);
    const run = started(await startRun(codeReview(), { host: h.host, task: "t", runId: "run-1" }));
    const events: RunEvent[] = [];
    for await (const event of run.events()) events.push(event);
    const deltas = events.filter(isModelDelta);
    expect(deltas.length).toBeGreaterThan(
      h.audit.of("run-1").filter((e) => e.type === "ModelTurn").length,
    );
    // Each piece comes before the audit event of the turn it is part of, and after the last one.
    for (const [at, delta] of events.entries()) {
      if (!isModelDelta(delta)) continue;
      const turnAt = events.findIndex(
        (e) =>
          e.type === "ModelTurn" &&
          e.stageExecutionId === delta.stageExecutionId &&
          e.attempt === delta.attempt &&
          e.payload.turn === delta.turn,
      );
      expect(turnAt).toBeGreaterThan(at);
    }
    // A tool call's pieces add up to the arguments the model called it with.
    const submit = deltas.filter((d) => d.kind === "tool-call" && d.tool === "submit_plan");
    const args = JSON.parse(submit.map((d) => (d.kind === "tool-call" ? d.input : "")).join(""));
    expect(args).toMatchObject({ summary: expect.any(String), steps: expect.any(Array) });
    // Not stored, and not kept for a reader who comes later.
    expect(events.filter((e) => !isModelDelta(e))).toEqual(h.audit.of("run-1"));
    const late: RunEvent[] = [];
    for await (const event of run.events()) late.push(event);
    expect(late.filter(isModelDelta)).toEqual([]);
    expect(late).toEqual(h.audit.of("run-1"));
  });

  it("builds no pieces of a reply when nobody reads them as its call starts", async () => {
    const told = vi.spyOn(EventFeed.prototype, "delta");
    try {
      const h = harness(CODE_REVIEW_SCRIPT);
      const run = started(
        await startRun(codeReview(), { host: h.host, task: "t", runId: "run-1" }),
      );
      for await (const _ of run.events({ deltas: false })) {
      }
      expect((await run.result).status).toBe("done");
      expect(told).not.toHaveBeenCalled();
    } finally {
      told.mockRestore();
    }
  });

  it("streams the run's audit events and ends with the run", async () => {
    const h = harness(CODE_REVIEW_SCRIPT);
    const run = started(await startRun(codeReview(), { host: h.host, task: "t", runId: "run-1" }));
    const seen: string[] = [];
    for await (const event of run.events({ deltas: false })) seen.push(event.type);
    expect(seen[0]).toBe("RunStarted");
    expect(seen.at(-1)).toBe("RunCompleted");
    expect(seen).toEqual(h.audit.of("run-1").map((e) => e.type));
  });
});

describe("embedding", () => {
  it("a user's XState machine invokes a compiled pipeline, gets its output on onDone, and can override it", async () => {
    const h = harness("stages: {}");
    const pipeline = pipelineOf({
      id: "inner-work",
      stages: [
        waits("draft", 5000),
        code("publish", () => ({ verdict: "ok", output: { published: true } })),
      ],
      next: { draft: "publish" },
    });
    const compiled = compilePipeline(pipeline, h.host);
    const app = setup({
      types: {} as { context: { outcome?: unknown }; events: { type: "SKIP_DRAFT" } },
      actors: { work: compiled },
    }).createMachine({
      context: {},
      initial: "working",
      states: {
        working: {
          invoke: {
            id: "work",
            src: "work",
            input: { runId: "embedded-1", ctx: { task: "ship it" } },
            onDone: {
              target: "finished",
              actions: assign({ outcome: ({ event }) => event.output }),
            },
          },
          on: {
            SKIP_DRAFT: {
              actions: ({ self }) =>
                self.getSnapshot().children.work?.send({
                  type: "OVERRIDE",
                  to: "publish",
                  reason: "draft approved elsewhere",
                }),
            },
          },
        },
        finished: { type: "final" },
      },
    });
    const actor = createActor(app);
    actor.start();
    await waitFor(actor, (s) =>
      Boolean(s.children.work?.getSnapshot().context.current === "draft"),
    );
    actor.send({ type: "SKIP_DRAFT" });
    await toPromise(actor);
    expect(actor.getSnapshot().context.outcome).toMatchObject({
      status: "done",
      result: { verdict: "ok", output: { published: true } },
    });
    expect(
      h.audit.of("embedded-1").find((e) => e.type === "OverrideApplied")?.payload,
    ).toMatchObject({
      reason: "draft approved elsewhere",
    });
  });
});

describe("a run's own ctx", () => {
  const pipeline = pipelineOf({ stages: [code("only", () => ({ verdict: "ok" }))] });

  it.each(["upstream", "workflowRunId", "stageExecutionId"])(
    "cannot set ctx.%s, which the engine gives every stage",
    async (field) => {
      const started = await startRun(pipeline, {
        host: harness("stages: {}").host,
        ctx: { [field]: 1 },
      });
      expect(started.ok ? undefined : started.error).toMatchObject({
        code: "Validation/RunContextInvalid",
        message: expect.stringContaining(`ctx.${field}`),
      });
    },
  );

  it("takes the task once: as task or as ctx.task, not both", async () => {
    const host = harness("stages: {}").host;
    const twice = await startRun(pipeline, { host, task: "a", ctx: { task: "b" } });
    expect(twice.ok ? undefined : twice.error.code).toBe("Validation/RunContextInvalid");
  });
});

describe("a run whose Bash is not sandboxed says so at its start", () => {
  const NO_BWRAP = "/nonexistent/stagechart-test/bwrap";
  const listsHome = () =>
    pipelineOf({ stages: [{ kind: "command", id: "look", command: "ls /root", timeoutMs: 5000 }] });

  it("auto without bubblewrap: SandboxUnavailable right after RunStarted, and Bash is refused", async () => {
    const h = harness("stages: {}", { mode: "yolo", sandbox: { bwrap: NO_BWRAP } });
    const result = await started(await startRun(listsHome(), { host: h.host, runId: "run-1" }))
      .result;
    expect(h.types().slice(0, 2)).toEqual(["RunStarted", "SandboxUnavailable"]);
    expect(h.audit.of("run-1")[1]?.payload).toEqual({
      mode: "auto",
      reason: `bubblewrap (${NO_BWRAP}) is not installed`,
      bash: "refused",
    });
    expect(result.results.look?.verdict).toBe("fail");
    expect(h.types()).toContain("ToolFailed");
  });

  it("auto without bubblewrap, unconfined Bash allowed: the event records the choice, and Bash runs", async () => {
    const h = harness("stages: {}", {
      mode: "yolo",
      sandbox: { bwrap: NO_BWRAP, allowUnconfined: true },
    });
    const result = await started(await startRun(listsHome(), { host: h.host, runId: "run-1" }))
      .result;
    expect(h.audit.of("run-1")[1]).toMatchObject({
      type: "SandboxUnavailable",
      payload: {
        mode: "auto",
        reason: `bubblewrap (${NO_BWRAP}) is not installed`,
        bash: "unconfined",
        allowUnconfined: true,
      },
    });
    expect(result.results.look?.verdict).toBe("ok");
  });

  it("required without bubblewrap: the event says Bash is refused, and the command stage fails", async () => {
    const h = harness("stages: {}", {
      mode: "yolo",
      sandbox: { mode: "required", bwrap: NO_BWRAP },
    });
    const result = await started(await startRun(listsHome(), { host: h.host, runId: "run-1" }))
      .result;
    expect(h.audit.of("run-1")[1]).toMatchObject({
      type: "SandboxUnavailable",
      payload: { mode: "required", bash: "refused" },
    });
    expect(result.results.look?.verdict).toBe("fail");
    expect(h.types()).toContain("ToolFailed");
  });

  it("off: the event says the host turned the sandbox off", async () => {
    const h = harness("stages: {}", { mode: "yolo", sandbox: { mode: "off" } });
    await started(await startRun(listsHome(), { host: h.host, runId: "run-1" })).result;
    expect(h.audit.of("run-1")[1]?.payload).toEqual({
      mode: "off",
      reason: "the host turned the sandbox off",
      bash: "unconfined",
    });
  });

  it("says nothing when the host has no Bash", async () => {
    const h = harness("stages: {}", { tools: [], sandbox: { mode: "off" } });
    const pipeline = pipelineOf({ stages: [code("noop", () => ({ verdict: "ok" }))] });
    await started(await startRun(pipeline, { host: h.host, runId: "run-1" })).result;
    expect(h.types()).not.toContain("SandboxUnavailable");
  });

  // Skipped only off CI where bubblewrap cannot run; CI installs it, so there it must pass.
  it.skipIf(!bashConfinement(DEFAULT_SANDBOX).sandboxed && process.env.CI !== "true")(
    "says nothing when Bash is sandboxed, and the command stage cannot see the home directory",
    async () => {
      const h = harness("stages: {}", { mode: "yolo" });
      const result = await started(await startRun(listsHome(), { host: h.host, runId: "run-1" }))
        .result;
      expect(h.types()).not.toContain("SandboxUnavailable");
      expect(result.results.look).toMatchObject({ verdict: "fail", output: { exitCode: 2 } });
    },
  );
});
