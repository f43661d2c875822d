import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { JoinPolicy, MapGroup } from "../../src/definitions/pipeline-types.js";
import { loadPipelineFile } from "../../src/index.js";
import { mutationScore } from "../../src/testing/mutation.js";
import { stageOutcomes } from "../../src/testing/outcomes.js";
import { pipelinePaths } from "../../src/testing/paths.js";
import { runPath } from "../../src/testing/run-path.js";
import { testPipeline } from "../../src/testing/test-pipeline.js";
import { load, loaded } from "../support/pipeline-files.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";

const FIXTURE = join(import.meta.dirname, "../fixtures/map-review/review-files.yaml");

/** `list` (code) hands on `files`; `test` runs once per file under `policy`; `review` joins. */
const mapped = (policy: JoinPolicy, group: Partial<MapGroup> = {}) =>
  pipelineOf({
    id: "mapped",
    stages: [
      code("list", () => ({ verdict: "ok", output: { files: ["src/a.ts"] } })),
      llm("test"),
      llm("review"),
    ],
    next: {
      list: { kind: "map", over: "output.files", stage: "test", join: "review", policy, ...group },
    },
  });

describe("testPipeline through a map group, on the real engine", () => {
  it("passes every path of a pipeline whose LLM stage lists the files, each reviewed by an item of its own", async () => {
    const loaded = await loadPipelineFile(FIXTURE);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const report = await testPipeline(loaded.value, { cover: "states" });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.passed).toBeGreaterThan(10);
    expect(report.coverage.transitions.uncovered.map((u) => u.transition)).toEqual([
      expect.stringContaining("list refused"),
    ]);
  });

  for (const [label, policy, group] of [
    ["fail-fast", { kind: "fail-fast" }, {}],
    ["any, one item at a time", { kind: "any" }, { maxConcurrency: 1 }],
    ["quorum 2 of at most 3", { kind: "quorum", k: 2 }, { maxItems: 3 }],
  ] as [string, JoinPolicy, Partial<MapGroup>][]) {
    it(`passes every simple path of a ${label} map group, its code fan-out handing on each list`, async () => {
      const report = await testPipeline(mapped(policy, group), { strategy: "simple" });
      expect(report.paths.filter((p) => !p.ok)).toEqual([]);
      const uncovered = report.coverage.transitions.uncovered.map((u) => u.transition);
      expect(uncovered).toEqual(
        group.maxItems === undefined ? [expect.stringContaining("list refused")] : [],
      );
    });
  }

  it("fits the list into what an LLM fan-out's exit hook hands on", async () => {
    // The hook always hands on one step: each path's list replaces it, the rest kept.
    const pipeline = pipelineOf({
      id: "hooked",
      stages: [llm("plan"), llm("test"), llm("review")],
      next: {
        plan: {
          kind: "map",
          over: "output.steps",
          stage: "test",
          join: "review",
          policy: { kind: "all-settled" },
        },
      },
      hooks: { plan: { exit: () => ({ steps: ["from the hook"], note: "kept" }) } },
    });
    const report = await testPipeline(pipeline, { strategy: "simple" });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.paths.some((p) => p.actual.transitions[0] === "plan → test ×2 (map)")).toBe(true);
  });
});

describe("testPipeline through a map group and sub-pipelines", () => {
  it("drives a sub-pipeline run for each item, and a map group inside a sub-pipeline", async () => {
    const leaf = pipelineOf({ id: "leaf", stages: [llm("test")] });
    const perItem = pipelineOf({
      id: "per-item",
      stages: [
        code("list", () => ({ verdict: "ok", output: { files: ["src/a.ts"] } })),
        { kind: "pipeline", id: "check", pipeline: leaf },
        llm("review"),
      ],
      next: {
        list: {
          kind: "map",
          over: "output.files",
          stage: "check",
          join: "review",
          policy: { kind: "all-settled" },
        },
      },
    });
    const within = pipelineOf({
      id: "within",
      stages: [llm("plan"), { kind: "pipeline", id: "mapping", pipeline: mapped({ kind: "any" }) }],
      next: { plan: "mapping" },
    });
    for (const pipeline of [perItem, within]) {
      const report = await testPipeline(pipeline, { timeoutMs: 10_000 });
      expect(report.paths.filter((p) => !p.ok)).toEqual([]);
      expect(report.passed).toBeGreaterThan(3);
    }
  });
});

/** A person picks at most two files; a test runs per file, and a quorum of two joins at review. */
const CHOOSING = `id: choosing
context:
  type: object
  properties: { task: { type: string } }
entry: choose
stages:
  choose:
    ask:
      prompt: Which files?
      schema:
        type: object
        required: [files]
        properties: { files: { type: array, items: { type: string }, maxItems: 2 } }
        additionalProperties: false
  test: { file: ../stages/test.md }
  review: { file: ../stages/review.md }
next:
  choose:
    map: { over: output.files, stage: test }
    join: review
    policy: { quorum: 2 }
`;

describe("testPipeline through a map group after an ask stage", () => {
  it("answers with a list of each length its schema allows, and says which it does not", async () => {
    const pipeline = loaded((await load(CHOOSING)).result);
    const { outcomes, unsatisfiable } = stageOutcomes(pipeline, "choose");
    expect(outcomes.map((o) => o.name)).toContain("answered: output.files has 2 items");
    expect(unsatisfiable).toEqual([
      expect.objectContaining({ name: "answered: output.files has 3 items" }),
    ]);
    const report = await testPipeline(pipeline, { timeoutMs: 10_000 });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.passed).toBeGreaterThan(3);
  });
});

describe("testPipeline through a map group over a list in ctx", () => {
  it("runs the list the paths' ctx holds", async () => {
    const pipeline = pipelineOf({
      context: {
        type: "object",
        required: ["task", "files"],
        properties: {
          task: { type: "string" },
          files: { type: "array", items: { type: "string" } },
        },
      },
      stages: [llm("plan"), llm("test"), llm("review")],
      next: {
        plan: {
          kind: "map",
          over: "ctx.files",
          stage: "test",
          join: "review",
          policy: { kind: "fail-fast" },
        },
      },
    });
    const ctx = { task: "rename auth", files: ["src/a.ts", "src/b.ts"] };
    const report = await testPipeline(pipeline, { ctx, timeoutMs: 10_000 });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.paths.map((p) => p.actual.transitions[0])).toContain("plan → test ×2 (map)");
  });
});

describe("runPath through a map group", () => {
  it("fails a path naming an item the list does not have, saying where", async () => {
    const pipeline = mapped({ kind: "fail-fast" });
    const run = await runPath(pipeline, {
      steps: [
        { stage: "list", outcome: "ok: output.files has 1 item" },
        { stage: "test[0]", outcome: "ok" },
        { stage: "test[1]", outcome: "ok" },
      ],
      end: "done",
    });
    expect(run).toMatchObject({
      ok: false,
      reason: "step 3 (test[1]: ok): test[1] does not run then",
    });
  });

  it("drives each item to its own outcome: the second of two fails, failing a fail-fast group", async () => {
    const pipeline = mapped({ kind: "fail-fast" });
    const run = await runPath(pipeline, {
      steps: [
        { stage: "list", outcome: "ok: output.files has 2 items" },
        { stage: "test[0]", outcome: "ok" },
        { stage: "test[1]", outcome: "retries-exhausted" },
      ],
      end: "failed",
    });
    expect(run).toMatchObject({ ok: true, actual: { end: "failed" } });
    expect(run.actual.transitions).toEqual([
      "list → test ×2 (map)",
      "test[1] failed the group after list (fail-fast)",
    ]);
  });

  it("fails a path whose list length the fan-out's fixture does not hand on", async () => {
    const pipeline = mapped({ kind: "all-settled" });
    const path = pipelinePaths(pipeline).paths.find((p) =>
      p.steps.some((s) => s.outcome === "ok: output.files has 2 items"),
    );
    if (!path) throw new Error("no path with two items");
    const run = await runPath(pipeline, path, {
      fixtures: { list: { verdict: "ok", output: { files: ["only.ts"] } } },
    });
    expect(run).toMatchObject({
      ok: false,
      reason: expect.stringContaining(
        "the run left the path: transition 1: expected list → test ×2 (map), got list → test ×1 (map)",
      ),
    });
  });
});

describe("the mutation score of a map group's paths", () => {
  it("catches each change of the group's policy: the paths through its tallies tell them apart", async () => {
    const loaded = await loadPipelineFile(FIXTURE);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const report = await mutationScore(loaded.value, { mutants: 1_000, timeoutMs: 10_000 });
    const policies = report.mutants.filter((m) => m.description.includes("'s group"));
    expect(policies.map((m) => m.description)).toContain(
      "list-files's group (all-settled, joining at summarize) under fail-fast",
    );
    expect(policies.filter((m) => m.status !== "caught")).toEqual([]);
  });

  it("tells a policy change no list the group takes can show apart as equivalent", async () => {
    // With at most one item, fail-fast and any decide alike; with two, any waits for the second.
    const underAny = async (group: Partial<MapGroup>) => {
      const pipeline = mapped({ kind: "fail-fast" }, group);
      const report = await mutationScore(pipeline, { mutants: 1_000, timeoutMs: 10_000 });
      return report.mutants.find((m) => m.description.endsWith("under any"))?.status;
    };
    expect(await underAny({ maxItems: 1 })).toBe("equivalent");
    expect(await underAny({})).toBe("caught");
  });
});
