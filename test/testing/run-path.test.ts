import { describe, expect, it } from "vitest";
import type { CodeStageFunction } from "../../src/definitions/contract.js";
import type { JoinPolicy } from "../../src/definitions/pipeline-types.js";
import { pipelinePaths } from "../../src/testing/paths.js";
import { runPath } from "../../src/testing/run-path.js";
import { testPipeline } from "../../src/testing/test-pipeline.js";
import { DECIDING } from "../support/ask-pipelines.js";
import { load, loaded } from "../support/pipeline-files.js";
import { code, fanOutPipeline, llm, pipelineOf } from "../support/pipelines.js";

/** plan, then execute fans out to test and lint under `policy`; review joins and routes on approval. */
const fanOut = (policy: JoinPolicy, maxConcurrency?: number) =>
  fanOutPipeline(policy, {
    id: "fan-out",
    maxConcurrency,
    review: {
      kind: "rules",
      rules: [
        { when: { path: "output.approved", op: "equals", value: true }, to: "done" },
        { to: "fail" },
      ],
    },
  });

describe("testPipeline on the real engine", () => {
  for (const [label, policy, maxConcurrency] of [
    ["fail-fast", { kind: "fail-fast" }, undefined],
    ["any", { kind: "any" }, undefined],
    ["quorum 1", { kind: "quorum", k: 1 }, undefined],
  ] as [string, JoinPolicy, number | undefined][]) {
    it(`passes every simple path of a ${label} group and covers every transition`, async () => {
      const report = await testPipeline(fanOut(policy, maxConcurrency), { strategy: "simple" });
      expect(report.paths.filter((p) => !p.ok)).toEqual([]);
      expect(report.coverage.transitions.uncovered).toEqual([]);
    });
  }

  it("passes every simple path of an all-settled group run one at a time and covers every transition", async () => {
    const report = await testPipeline(fanOut({ kind: "all-settled" }, 1), { strategy: "simple" });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.coverage.transitions.uncovered).toEqual([]);
  });
});

describe("runPath", () => {
  it("fails a path the pipeline does not take, saying where", async () => {
    const pipeline = fanOut({ kind: "fail-fast" });
    const { ctx } = pipelinePaths(pipeline);
    const run = await runPath(
      pipeline,
      {
        steps: [
          { stage: "plan", outcome: "ok" },
          { stage: "execute", outcome: "ok" },
          { stage: "review", outcome: "ok: output.approved equals true" },
        ],
        end: "done",
      },
      { ctx },
    );
    expect(run.ok).toBe(false);
    expect(run.reason).toBe(
      "step 3 (review: ok: output.approved equals true): review does not run then",
    );
  });

  it("fails a path whose end the run does not reach", async () => {
    const pipeline = fanOut({ kind: "fail-fast" });
    const done = pipelinePaths(pipeline).paths.find((p) => p.end === "done");
    if (!done) throw new Error("no path ends done");
    const run = await runPath(pipeline, { ...done, end: "failed" });
    expect(run).toMatchObject({ ok: false, expected: { end: "failed" }, actual: { end: "done" } });
  });

  it("drives control events: OVERRIDE, REDO and CANCEL are sent to the run where the path reaches them", async () => {
    const pipeline = fanOut({ kind: "fail-fast" });
    const list = pipelinePaths(pipeline, { events: ["override", "redo", "cancel"], maxVisits: 2 });
    for (const kind of ["OVERRIDE", "REDO", "CANCEL"]) {
      const path = list.paths.find(
        (p) => p.end !== "suspended" && p.steps.some((s) => s.outcome.startsWith(kind)),
      );
      if (!path) throw new Error(`no path with ${kind}`);
      const run = await runPath(pipeline, path, { ctx: list.ctx });
      expect({ kind, ok: run.ok, reason: run.reason }).toEqual({
        kind,
        ok: true,
        reason: undefined,
      });
      expect(run.actual.transitions).toEqual(run.expected.transitions);
    }
  });

  it("drives a sibling entered again after a REDO cancelled it: its cancelled execution counts as a visit", async () => {
    const pipeline = fanOut({ kind: "fail-fast" });
    const run = await runPath(
      pipeline,
      {
        steps: [
          { stage: "plan", outcome: "ok" },
          { stage: "execute", outcome: "ok" },
          { stage: "test", outcome: "REDO execute" },
          { stage: "execute", outcome: "ok" },
          { stage: "lint", outcome: "retries-exhausted" },
        ],
        end: "failed",
      },
      { timeoutMs: 10_000 },
    );
    expect({ ok: run.ok, reason: run.reason }).toEqual({ ok: true, reason: undefined });
  });
});

describe("runPath through a code stage", () => {
  /** plan, then a code stage `check` that always passes, then done; a failed check fails the run. */
  const checked = pipelineOf({
    id: "checked",
    stages: [llm("plan"), code("check", () => ({ verdict: "ok" }))],
    next: { plan: "check" },
  });
  const failedCheck = {
    steps: [
      { stage: "plan", outcome: "ok" },
      { stage: "check", outcome: "fail" },
    ],
    end: "failed" as const,
  };

  it("reports a path the real code does not take as not driven, saying which stage needs a fixture and what it did", async () => {
    const run = await runPath(checked, failedCheck);
    expect(run.ok).toBe(false);
    expect(run.reason).toBe(
      "not driven: step 2: check is a code stage whose outcome no script forces; give it a fixture; step 2 (check: fail): check ended ok, not fail",
    );
  });

  it("names, of the steps no script forces, the one whose stage went otherwise", async () => {
    const twice = pipelineOf({
      id: "twice",
      stages: [
        llm("plan"),
        code("check", () => ({ verdict: "ok" })),
        code("recheck", () => ({ verdict: "ok" })),
      ],
      next: { plan: "check", check: "recheck" },
    });
    const run = await runPath(twice, {
      steps: [
        { stage: "plan", outcome: "ok" },
        { stage: "check", outcome: "ok" },
        { stage: "recheck", outcome: "fail" },
      ],
      end: "failed",
    });
    expect(run.reason).toBe(
      "not driven: step 3: recheck is a code stage whose outcome no script forces; give it a fixture; step 3 (recheck: fail): recheck ended ok, not fail",
    );
  });

  it("does not run a path that sends a control event from a code stage, which no model call could send", async () => {
    const started = Date.now();
    const run = await runPath(checked, {
      steps: [
        { stage: "plan", outcome: "ok" },
        { stage: "check", outcome: "CANCEL" },
      ],
      end: "cancelled",
    });
    expect(run).toMatchObject({
      ok: false,
      actual: { end: "not-run" },
      reason:
        "not driven: step 2: CANCEL is sent while a stage's model is called; check is a code stage",
    });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("drives a code stage with the fixture a user supplies, and says when the fixture ends otherwise", async () => {
    const driven = await runPath(checked, failedCheck, {
      fixtures: { check: { verdict: "fail", reason: "lint errors" } },
    });
    expect({ ok: driven.ok, reason: driven.reason }).toEqual({ ok: true, reason: undefined });
    const mismatched = await runPath(checked, failedCheck, {
      fixtures: { check: { verdict: "ok" } },
    });
    expect(mismatched.reason).toBe("not driven: step 2: check's fixture ends ok, the path fail");
  });
});

describe("runPath through a sub-pipeline stage", () => {
  it("drives the sub-pipeline's own stages with scripted models, to ok and to fail", async () => {
    const sub = pipelineOf({ id: "sub", stages: [llm("review")] });
    const parent = pipelineOf({
      id: "parent",
      stages: [llm("plan"), { kind: "pipeline", id: "inner", pipeline: sub }],
      next: { plan: "inner" },
    });
    const report = await testPipeline(parent, { timeoutMs: 10_000 });
    const through = report.paths.filter((p) =>
      p.expected.transitions.includes("plan → inner (sequential)"),
    );
    expect(through.length).toBeGreaterThanOrEqual(2);
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
  });

  it("stands in for a sub-pipeline's code stage with the fixture named by its path of stage ids, leaving the outcomes it leaves out to the code", async () => {
    // Runs a task through Bash, which nobody approves in a test run: it can end ok only by a fixture.
    const runTask = code("run-task", async ({ callTool }) => {
      const ran = await callTool("Bash", { command: "true" });
      return ran.ok ? { verdict: "ok", output: { ran: true } } : { verdict: "fail" };
    });
    const sub = pipelineOf({ id: "sub", stages: [runTask] });
    const parent = pipelineOf({
      id: "parent",
      stages: [llm("plan"), { kind: "pipeline", id: "inner", pipeline: sub }],
      next: { plan: "inner" },
    });
    const unfixed = await testPipeline(parent, { timeoutMs: 10_000 });
    expect(unfixed.paths.find((p) => p.expected.end === "done")?.reason).toMatch(
      /^not driven: step 2: inner is a pipeline stage: step 1: run-task is a code stage whose outcome no script forces; give it a fixture \(inner\/run-task\)/,
    );
    const fixtures = { "inner/run-task": { ok: { verdict: "ok" as const } } };
    const report = await testPipeline(parent, { fixtures, timeoutMs: 10_000 });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.coverage.transitions.uncovered).toEqual([]);
  });

  it("drives a sub-pipeline nested in a sub-pipeline", async () => {
    const innermost = pipelineOf({ id: "innermost", stages: [llm("review")] });
    const middle = pipelineOf({
      id: "middle",
      stages: [{ kind: "pipeline", id: "deep", pipeline: innermost }],
    });
    const parent = pipelineOf({
      id: "parent",
      stages: [llm("plan"), { kind: "pipeline", id: "inner", pipeline: middle }],
      next: { plan: "inner" },
    });
    const report = await testPipeline(parent, { timeoutMs: 10_000 });
    expect(report.paths.filter((p) => p.expected.end === "done")).not.toEqual([]);
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
  });

  it("drives every visit of a sub-pipeline stage, each down its own sub-path", async () => {
    const sub = pipelineOf({ id: "sub", stages: [llm("review")] });
    // A failed inner goes back to plan, and inner runs again, until its third visit fails the run.
    const parent = pipelineOf({
      id: "parent",
      stages: [llm("plan"), { kind: "pipeline", id: "inner", pipeline: sub }],
      next: {
        plan: "inner",
        inner: {
          kind: "rules",
          rules: [
            { when: { visits: "inner", op: "gte", value: 3 }, to: "fail" },
            { when: { path: "verdict", op: "equals", value: "fail" }, to: "plan" },
            { to: "done" },
          ],
        },
      },
    });
    const step = (stage: string, outcome: string) => ({ stage, outcome });
    const run = await runPath(
      parent,
      {
        steps: [step("plan", "ok"), step("inner", "fail"), step("plan", "ok"), step("inner", "ok")],
        end: "done",
      },
      { timeoutMs: 10_000 },
    );
    expect({ ok: run.ok, reason: run.reason }).toEqual({ ok: true, reason: undefined });
    expect(run.actual.transitions).toEqual([
      "plan → inner (sequential)",
      "inner → plan (sequential)",
      "plan → inner (sequential)",
      "inner → done (terminal)",
    ]);
    const list = pipelinePaths(parent);
    const revisiting = list.paths.filter(
      (p) => p.steps.filter((s) => s.stage === "inner").length > 1,
    );
    expect(revisiting.map((p) => p.end)).toEqual(expect.arrayContaining(["done", "failed"]));
    const report = await testPipeline(parent, {
      paths: { ...list, paths: revisiting },
      timeoutMs: 10_000,
    });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
  });
});

describe("runPath through stages whose code computes the output their rules read", () => {
  const onNext = {
    kind: "rules" as const,
    rules: [{ when: { path: "output.next", op: "equals" as const, value: "done" }, to: "done" }],
  };
  /** review's assert holds it forever and its exit hook hands on `{next: "nowhere"}`: the real hooks never let it route. */
  const hooked = pipelineOf({
    id: "hooked",
    stages: [llm("review")],
    next: { review: onNext },
    hooks: {
      review: {
        assert: () => ({ verdict: "retry", reason: "the artifacts are missing" }),
        exit: () => ({ next: "nowhere" }),
      },
    },
  });

  it("stubs an exit hook (and the assert checking what it reads) with each split's output, covering every transition", async () => {
    const report = await testPipeline(hooked, { timeoutMs: 10_000 });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.paths.map((p) => p.actual.end)).toEqual(
      expect.arrayContaining(["done", "failed"]),
    );
    expect(report.coverage.transitions.uncovered).toEqual([]);
  });

  it("answers the gate (here one that always blocks) of a stage whose exit hook it stubs as each path says", async () => {
    const review = hooked.hooks.review;
    const gated = { ...hooked, hooks: { review: { ...review, gate: () => "block" as const } } };
    const report = await testPipeline(gated, { timeoutMs: 10_000 });
    expect(report.paths.map((p) => p.expected.end)).toEqual(expect.arrayContaining(["suspended"]));
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
  });

  it("ends a code stage with each split's output and the fail path's verdict, without a fixture", async () => {
    const routed = pipelineOf({
      id: "routed",
      stages: [code("check", () => ({ verdict: "ok", output: { next: "nowhere" } }))],
      next: { check: onNext },
    });
    const report = await testPipeline(routed, { timeoutMs: 10_000 });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.paths.map((p) => p.expected.end).sort()).toEqual(["done", "failed"]);
    expect(report.coverage.transitions.uncovered).toEqual([]);
    const failing = await runPath(routed, {
      steps: [{ stage: "check", outcome: "fail" }],
      end: "failed",
    });
    expect(failing).toMatchObject({ ok: true, actual: { end: "failed" } });
  });
});

describe("runPath through a stage whose code computes both its route and what the next stage reads", () => {
  /** The notes the stage before handed on; the stage fails without them, as arena-debate's aggregate does. */
  const readsNotes: CodeStageFunction = ({ ctx }) => {
    const notes = (ctx.upstream[0]?.output as { notes?: unknown } | undefined)?.notes;
    if (!Array.isArray(notes)) throw new Error("the stage before handed on no notes");
    return { verdict: "ok", output: { notes: [...notes, "used"] } };
  };
  const again = { path: "output.next", op: "equals" as const, value: "again" };
  const routes = (onAgain: string) => ({
    kind: "rules" as const,
    rules: [{ when: again, to: onAgain }, { to: "use" }],
  });
  const through = (first: string, outcome: string) => ({
    steps: [
      { stage: first, outcome },
      { stage: "use", outcome: "ok" },
    ],
    end: "done" as const,
  });

  it("hands on what a code stage's function returns, with only the field its rules read set as the path's split needs", async () => {
    const tally = code("tally", () => ({
      verdict: "ok",
      output: { notes: ["tallied"], next: "again" },
    }));
    const chained = pipelineOf({
      id: "chained",
      stages: [tally, code("use", readsNotes), llm("review")],
      next: { tally: routes("review"), use: "done", review: "done" },
    });
    const run = await runPath(chained, through("tally", 'ok: not output.next equals "again"'), {
      timeoutMs: 10_000,
    });
    expect({ ok: run.ok, reason: run.reason }).toEqual({ ok: true, reason: undefined });
  });

  it("hands on what an LLM stage's exit hook returns, with only the field its rules read set as the path's split needs", async () => {
    const chained = pipelineOf({
      id: "chained",
      stages: [llm("review"), code("use", readsNotes)],
      next: { review: routes("fail"), use: "done" },
      hooks: { review: { exit: () => ({ notes: ["reviewed"], next: "again" }) } },
    });
    const run = await runPath(chained, through("review", 'ok: not output.next equals "again"'), {
      timeoutMs: 10_000,
    });
    expect({ ok: run.ok, reason: run.reason }).toEqual({ ok: true, reason: undefined });
  });
});

describe("runPath through a person's answers", () => {
  it("answers an ask stage with each path's value, or leaves it unanswered where the path suspends", async () => {
    const { result } = await load(DECIDING);
    const report = await testPipeline(loaded(result), { strategy: "simple" });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.paths.map((p) => p.actual.end).sort()).toEqual(["done", "failed", "suspended"]);
  });

  it("answers a stage's gate with each path's defer or block, which its policy skips", async () => {
    const plan = llm("plan");
    if (plan.kind !== "llm") throw new Error("plan is an LLM stage");
    const gated = pipelineOf({
      id: "gated",
      stages: [{ ...plan, definition: { ...plan.definition, resolutionPolicy: "skip" } }],
      hooks: { plan: { gate: () => "block" as const } },
    });
    const gatePaths = pipelinePaths(gated, { strategy: "simple" }).paths.filter((path) =>
      path.steps.some((step) => step.outcome.startsWith("gate-")),
    );
    expect(gatePaths.map((path) => path.steps.map((step) => step.outcome))).toEqual([
      ["gate-defer"],
      ["gate-block"],
    ]);
    for (const path of gatePaths) {
      const run = await runPath(gated, path, { timeoutMs: 10_000 });
      expect({ ok: run.ok, reason: run.reason, end: run.actual.end }).toEqual({
        ok: true,
        reason: undefined,
        end: "done",
      });
    }
  });
});

describe("a stage under a budget", () => {
  const budgeted = (budget: NonNullable<ReturnType<typeof pipelineOf>["budget"]>) =>
    pipelineOf({
      id: "budgeted",
      stages: [llm("plan"), code("fallback", () => ({ verdict: "ok" }))],
      next: {
        plan: {
          kind: "rules",
          rules: [
            {
              when: { path: "error.code", op: "equals", value: "Cancellation/BudgetExceeded" },
              to: "fallback",
            },
            { to: "done" },
          ],
        },
      },
      budget,
    });

  it("has a budget-exceeded outcome, which a path drives on the real engine with a reply of the budget's tokens", async () => {
    const pipeline = budgeted({ stages: { plan: { maxOutputTokens: 500 } } });
    const { paths, ctx } = pipelinePaths(pipeline);
    const path = paths.find((p) => p.steps[0]?.outcome === "budget-exceeded");
    expect(path?.steps.map((s) => `${s.stage} ${s.outcome}`)).toEqual([
      "plan budget-exceeded",
      "fallback ok",
    ]);
    const run = await runPath(pipeline, path as NonNullable<typeof path>, { ctx });
    expect(run.ok).toBe(true);
  });

  it("says a cost or time budget is not driven by a script", async () => {
    const pipeline = budgeted({ run: { maxCostUsd: 1 } });
    const { paths, ctx } = pipelinePaths(pipeline);
    const path = paths.find((p) => p.steps[0]?.outcome === "budget-exceeded");
    const run = await runPath(pipeline, path as NonNullable<typeof path>, { ctx });
    expect(JSON.stringify(run)).toContain("budget limits only cost or time");
  });
});

describe("a wait with a deadline", () => {
  const timedOut = {
    when: { path: "error.code", op: "equals" as const, value: "Cancellation/WaitTimedOut" },
    to: "late",
  };
  const late = code("late", () => ({ verdict: "ok" }));

  it("gives an ask stage a timed-out outcome: its default answer, which the rules see, driven on the real engine", async () => {
    const pipeline = pipelineOf({
      id: "deciding",
      stages: [
        {
          kind: "ask",
          id: "decide",
          prompt: "Ship?",
          schema: { type: "boolean" },
          timeout: { afterMs: 1_000, fallback: { answer: false } },
        },
        late,
      ],
      next: {
        decide: {
          kind: "rules",
          rules: [
            { when: { path: "output", op: "equals", value: false }, to: "late" },
            { to: "done" },
          ],
        },
      },
    });
    const { paths, ctx } = pipelinePaths(pipeline);
    const path = paths.find((p) => p.steps[0]?.outcome === "timed-out");
    expect(path?.steps.map((s) => s.stage)).toEqual(["decide", "late"]);
    expect((await runPath(pipeline, path as NonNullable<typeof path>, { ctx })).ok).toBe(true);
  });

  it("gives a stage whose grant request fails at the deadline a grant-timed-out outcome, driven on the real engine", async () => {
    const pipeline = pipelineOf({
      id: "granting",
      stages: [llm("plan"), late],
      next: { plan: { kind: "rules", rules: [timedOut, { to: "done" }] } },
      grants: { approve: [], deny: [], timeout: { afterMs: 1_000, fallback: "fail" } },
    });
    const { paths, ctx } = pipelinePaths(pipeline);
    const path = paths.find((p) => p.steps[0]?.outcome === "grant-timed-out");
    expect(path?.steps.map((s) => `${s.stage} ${s.outcome}`)).toEqual([
      "plan grant-timed-out",
      "late ok",
    ]);
    const run = await runPath(pipeline, path as NonNullable<typeof path>, { ctx });
    expect(run.ok).toBe(true);
    const suspended = paths.find((p) => p.steps[0]?.outcome === "grant-suspended");
    const parked = await runPath(pipeline, suspended as NonNullable<typeof suspended>, { ctx });
    expect(JSON.stringify(parked)).toContain("suspends only until its wait's deadline");
  });

  it("lists no timed-out outcome where no timeout is declared", () => {
    const pipeline = pipelineOf({
      id: "granting",
      stages: [llm("plan"), late],
      next: { plan: { kind: "rules", rules: [timedOut, { to: "done" }] } },
    });
    const outcomes = pipelinePaths(pipeline).paths.flatMap((p) => p.steps.map((s) => s.outcome));
    expect(outcomes).not.toContain("grant-timed-out");
  });
});
