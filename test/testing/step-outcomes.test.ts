import { describe, expect, it } from "vitest";
import type { CodeStageFunction } from "../../src/definitions/contract.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { pipelinePaths } from "../../src/testing/paths.js";
import { runPath } from "../../src/testing/run-path.js";
import { testPipeline } from "../../src/testing/test-pipeline.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";

/**
 * plan fans out to `unit` (code) and `lint` under all-settled; review joins whatever they end
 * with (its inputsSchema left out, so a failed sibling does not refuse it) and routes on approval.
 * Under all-settled a sibling's verdict changes no transition and not the end.
 */
const settled = (unit: CodeStageFunction): PipelineDefinition =>
  pipelineOf({
    id: "settled",
    stages: [
      llm("plan"),
      code("unit", unit),
      llm("lint"),
      llm("review", (text) => text.replace(/inputsSchema:[\s\S]*?(?=retryPolicy:)/, "")),
    ],
    next: {
      plan: {
        kind: "parallel",
        siblings: ["unit", "lint"],
        join: "review",
        policy: { kind: "all-settled" },
      },
      review: {
        kind: "rules",
        rules: [
          { when: { path: "output.approved", op: "equals", value: true }, to: "done" },
          { to: "fail" },
        ],
      },
    },
  });

/** A code stage that reads `ctx.results`, which a code stage's ctx does not have: it throws. */
const throwing = settled(({ ctx }) => ({
  verdict: "ok",
  output: { failures: (ctx as unknown as { results: unknown[] }).results.length },
}));
const passing = settled(() => ({ verdict: "ok", output: { failures: 0 } }));

const says = (outcome: string) => (path: { steps: { stage: string; outcome: string }[] }) =>
  path.steps.some((s) => s.stage === "unit" && s.outcome === outcome);

describe("a path's stage outcomes, compared with what each stage did", () => {
  it("fails every path saying unit ends ok when its real code throws, naming the stage, the path's outcome and the recorded one", async () => {
    const list = pipelinePaths(throwing);
    expect(list.paths.filter(says("ok")).length).toBeGreaterThan(2);
    const report = await testPipeline(throwing, { paths: list, timeoutMs: 10_000 });
    const byId = new Map(list.paths.map((p) => [p.id, p]));
    for (const result of report.paths) {
      const path = byId.get(result.id);
      if (!path || !says("ok")(path)) continue;
      expect(result.ok).toBe(false);
      const index = path.steps.findIndex((s) => s.stage === "unit") + 1;
      expect(result.reason).toContain(
        `step ${index} (unit: ok): unit ended fail (Cannot read properties of undefined (reading 'length')), not ok`,
      );
    }
    // The real code does fail: the paths saying so are driven by it and pass.
    const failing = report.paths.filter((r) => {
      const path = byId.get(r.id);
      return path && says("fail")(path);
    });
    expect(failing.length).toBeGreaterThanOrEqual(2);
    expect(failing.filter((r) => !r.ok)).toEqual([]);
  });

  it("fails a path saying unit ends fail when its real code ends ok", async () => {
    const path = pipelinePaths(passing).paths.find((p) => says("fail")(p) && p.end === "done");
    if (!path) throw new Error("no path through unit: fail ends done");
    const run = await runPath(passing, path, { timeoutMs: 10_000 });
    expect(run.ok).toBe(false);
    expect(run.reason).toContain("(unit: fail): unit ended ok, not fail");
    expect(run.reason).toMatch(
      /^not driven: step \d: unit is a code stage whose outcome no script forces; give it a fixture/,
    );
  });

  it("passes a path whose every stage ends as it says: unit's real code failing, review not approving", async () => {
    const list = pipelinePaths(throwing);
    const path = list.paths.find((p) => says("fail")(p) && p.end === "failed");
    if (!path) throw new Error("no path through unit: fail ends failed");
    const run = await runPath(throwing, path, { ctx: list.ctx, timeoutMs: 10_000 });
    expect({ ok: run.ok, reason: run.reason }).toEqual({ ok: true, reason: undefined });
  });
});

describe("fixtures by the path's outcome", () => {
  const fixtures = {
    unit: {
      ok: { verdict: "ok" as const, output: { failures: 0 } },
      fail: { verdict: "fail" as const, reason: "2 tests failed" },
    },
  };

  it("drives a code stage to each outcome a path names, so every path passes and every transition is covered", async () => {
    const report = await testPipeline(throwing, {
      fixtures,
      strategy: "simple",
      timeoutMs: 10_000,
    });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.paths.length).toBeGreaterThan(6);
    expect(report.coverage.transitions.uncovered).toEqual([]);
  });

  it("leaves an outcome the stage's fixtures leave out to its code: a failure the fixture injects, the success the code has", async () => {
    const failure = { unit: { fail: fixtures.unit.fail } };
    const report = await testPipeline(passing, {
      fixtures: failure,
      strategy: "simple",
      timeoutMs: 10_000,
    });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.coverage.transitions.uncovered).toEqual([]);
  });

  it("says so when the code does not end as a path whose outcome the fixtures leave out", async () => {
    const path = pipelinePaths(passing).paths.find(says("fail"));
    if (!path) throw new Error("no path through unit: fail");
    const run = await runPath(passing, path, {
      fixtures: { unit: { ok: fixtures.unit.ok } },
      timeoutMs: 10_000,
    });
    expect(run.reason).toMatch(
      /^not driven: step (\d): unit's fixtures have no "fail", so its code runs; step \1 \(unit: fail\): unit ended ok, not fail$/,
    );
  });

  it("still takes one outcome for every visit of a stage", async () => {
    const path = pipelinePaths(throwing).paths.find(says("fail"));
    if (!path) throw new Error("no path through unit: fail");
    const run = await runPath(throwing, path, {
      fixtures: { unit: { verdict: "fail", reason: "2 tests failed" } },
      timeoutMs: 10_000,
    });
    expect({ ok: run.ok, reason: run.reason }).toEqual({ ok: true, reason: undefined });
  });
});
