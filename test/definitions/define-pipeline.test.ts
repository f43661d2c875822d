import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type CodeStageFunction,
  definePipeline,
  type GuardFunction,
  type JsonValue,
  loadPipeline,
  loadPipelineFile,
  loadStageFile,
  type PipelineSpec,
  type StageHooks,
} from "../../src/definitions/index.js";
import { loaded, MACHINES_DIR, placesOf, project } from "../support/pipeline-files.js";
import { STAGES_DIR } from "../support/stages.js";

const CONTEXT = {
  type: "object",
  required: ["task"],
  properties: { task: { type: "string", minLength: 1 } },
};

const reviewRules = [
  { when: { path: "output.approved", equals: true }, to: "done" },
  { when: { visits: "review", lt: 3 }, to: "execute" },
  { to: "fail" },
] as const;

const codeReview = definePipeline({
  id: "code-review",
  description: "Plan, implement and review a change",
  context: CONTEXT,
  entry: "plan",
  stages: {
    plan: { file: "../stages/plan.md" },
    execute: { file: "../stages/execute.md" },
    review: { file: "../stages/review.md" },
  },
  next: { plan: "execute", execute: "review", review: [...reviewRules] },
  grants: { approve: ["Bash(git status)"], deny: ["Bash(rm *)"] },
});

const problemsOf = async (spec: PipelineSpec) => {
  const result = await loadPipeline(spec, { baseDir: MACHINES_DIR });
  return result.ok ? result.warnings : result.diagnostics;
};

describe("definePipeline", () => {
  it("produces the same definition as the equivalent YAML file", async () => {
    const fromTs = loaded(await loadPipeline(codeReview, { baseDir: MACHINES_DIR }));
    const fromYaml = loaded(await loadPipelineFile(join(MACHINES_DIR, "code-review.yaml")));
    const { file, ...rest } = fromYaml;
    expect(file).toBe(join(MACHINES_DIR, "code-review.yaml"));
    expect(fromTs).toEqual(rest);
    expect("file" in fromTs).toBe(false);
  });

  it("produces the parallel pipeline's definition too", async () => {
    const parallel = definePipeline({
      id: "code-review-parallel",
      description: "Plan and implement a change, test and lint it in parallel, then review it",
      context: CONTEXT,
      entry: "plan",
      stages: {
        plan: { file: "../stages/plan.md" },
        execute: { file: "../stages/execute.md" },
        test: { file: "../stages/test.md" },
        lint: { file: "../stages/lint.md" },
        review: { file: "../stages/review.md" },
      },
      next: {
        plan: "execute",
        execute: { parallel: ["test", "lint"], join: "review", policy: "fail-fast" },
        review: [...reviewRules],
      },
      grants: { approve: ["Bash(git status)"], deny: ["Bash(rm *)"] },
    });
    const fromTs = loaded(await loadPipeline(parallel, { baseDir: MACHINES_DIR }));
    const { file: _, ...fromYaml } = loaded(
      await loadPipelineFile(join(MACHINES_DIR, "code-review-parallel.yaml")),
    );
    expect(fromTs).toEqual(fromYaml);
  });

  it("takes code stages, loaded stage definitions, sub-pipelines, guards and hooks", async () => {
    const plan = await loadStageFile(join(STAGES_DIR, "plan.md"));
    if (!plan.ok) throw new Error("plan.md");
    const check: CodeStageFunction = () => ({ verdict: "ok" });
    const approved: GuardFunction = (facts) => facts.output === true;
    const hooks: StageHooks = { gate: () => "proceed" };
    const inner = definePipeline({
      id: "inner",
      entry: "check",
      stages: { check: { code: check } },
    });
    const spec = definePipeline({
      id: "outer",
      context: CONTEXT,
      entry: "plan",
      stages: {
        plan: { stage: plan.value },
        check: { code: check },
        nested: { pipeline: inner },
        "from-file": { pipeline: "code-review.yaml" },
        build: { run: "npm run build", timeoutMs: 5000 },
      },
      next: {
        plan: [{ when: { guard: "approved" }, to: "check" }, { to: "fail" }],
        check: { parallel: ["nested", "from-file"], join: "build", policy: { quorum: 1 } },
      },
      guards: { approved },
      hooks: { plan: hooks },
    });
    const pipeline = loaded(await loadPipeline(spec, { baseDir: MACHINES_DIR }));
    expect(pipeline.stages).toMatchObject({
      plan: { kind: "llm", id: "plan", definition: plan.value },
      check: { kind: "code", id: "check", run: check },
      nested: { kind: "pipeline", pipeline: { id: "inner", stages: { check: { run: check } } } },
      "from-file": { kind: "pipeline", pipeline: { id: "code-review" } },
      build: { kind: "command", command: "npm run build", timeoutMs: 5000 },
    });
    expect(pipeline.guards).toEqual({ approved });
    expect(pipeline.hooks.plan).toBe(hooks);
    expect(pipeline.next.plan).toEqual({
      kind: "rules",
      rules: [{ when: { guard: "approved" }, to: "check" }, { to: "fail" }],
    });
  });

  it("builds a sub-pipeline spec used by several stages once: they hold one definition", async () => {
    const inner = definePipeline({
      id: "inner",
      entry: "check",
      stages: { check: { run: "true" } },
    });
    const loadedOuter = await loadPipeline(
      definePipeline({
        id: "outer",
        entry: "first",
        stages: { first: { pipeline: inner }, second: { pipeline: inner } },
        next: { first: "second" },
      }),
    );
    if (!loadedOuter.ok) throw new Error(JSON.stringify(loadedOuter.diagnostics));
    const { first, second } = loadedOuter.value.stages;
    if (first?.kind !== "pipeline" || second?.kind !== "pipeline")
      throw new Error("not sub-pipelines");
    expect(first.pipeline.id).toBe("inner");
    expect(second.pipeline).toBe(first.pipeline);
  });

  it("types targets, visits, hooks and guards by the spec's own stage and guard names", () => {
    const spec = definePipeline({
      id: "typed",
      entry: "a",
      stages: { a: { run: "x" }, b: { run: "y" } },
      // @ts-expect-error "c" is not a stage of this pipeline
      next: { a: "c" },
    });
    definePipeline({
      id: "typed",
      entry: "a",
      stages: { a: { run: "x" } },
      // @ts-expect-error no guards are defined, so no guard can be named
      next: { a: [{ when: { guard: "ready" }, to: "done" }] },
    });
    definePipeline({
      id: "typed",
      entry: "a",
      stages: { a: { run: "x" } },
      // @ts-expect-error visits names a stage
      next: { a: [{ when: { visits: "b", lt: 2 }, to: "done" }] },
    });
    expect(spec.id).toBe("typed");
  });

  describe("problems in a spec", () => {
    it("point at `<id>.ts (definePipeline)` 1:1 and name the path", async () => {
      const spec = definePipeline({
        id: "broken",
        entry: "a",
        stages: { a: { run: "x" }, b: { run: "y" } },
        next: { a: { parallel: ["b"], join: "done" } },
      });
      expect(await problemsOf(spec)).toEqual([
        {
          file: "broken.ts (definePipeline)",
          line: 1,
          column: 1,
          code: "ExtensionHost/InvalidParallelPlan",
          severity: "error",
          message:
            "next.a.parallel: a parallel group runs at least two siblings, this one 1; use a plain successor for one",
        },
      ]);
    });

    it("a guard that is not defined is GuardUnknown, naming the guards there are", async () => {
      const spec = {
        id: "guarded",
        entry: "a",
        stages: { a: { run: "x" } },
        next: { a: [{ when: { guard: "ready" }, to: "done" }] },
        guards: { approved: () => true },
      } as PipelineSpec;
      expect(await problemsOf(spec)).toMatchObject([
        {
          code: "Validation/GuardUnknown",
          message: 'next.a[0].when.guard: no guard "ready": the pipeline\'s guards are approved',
        },
      ]);
    });

    it("hooks attach only to the pipeline's LLM stages", async () => {
      const spec = {
        id: "hooked",
        entry: "a",
        stages: { a: { run: "x" } },
        hooks: { a: {}, ghost: {} },
      } as PipelineSpec;
      expect((await problemsOf(spec)).map((d) => [d.code, d.message])).toEqual([
        [
          "Validation/PipelineDefinitionInvalid",
          'hooks.a: hooks attach to the LLM stages of this pipeline, and "a" is not one',
        ],
        [
          "Validation/PipelineDefinitionInvalid",
          'hooks.ghost: hooks attach to the LLM stages of this pipeline, and "ghost" is not one',
        ],
      ]);
    });

    it("an exit hook and an output list are two ways to write one output: one of them", async () => {
      const spec = definePipeline({
        id: "reduced",
        context: CONTEXT,
        entry: "plan",
        stages: { plan: { file: "../stages/plan.md", output: ["summary"] } },
        hooks: { plan: { exit: ({ parsed }) => parsed as JsonValue } },
      });
      expect((await problemsOf(spec)).map((d) => [d.code, d.message])).toEqual([
        [
          "Validation/PipelineDefinitionInvalid",
          "hooks.plan.exit: stages.plan already lists its output; write the output one way, the list or the exit hook",
        ],
      ]);
      const { output: _, ...plain } = spec.stages.plan as { file: string; output: string[] };
      const hooked = loaded(
        await loadPipeline({ ...spec, stages: { plan: plain } }, { baseDir: MACHINES_DIR }),
      );
      expect(hooked.hooks.plan).toBe(spec.hooks?.plan);
    });

    it("values a JavaScript caller got wrong are PipelineDefinitionInvalid, never an exception", async () => {
      const spec = {
        id: "untyped",
        entry: "a",
        stages: { a: { code: "return 1" }, b: { stage: "plan.md" }, c: { pipeline: 42 } },
        next: { a: { parallel: ["b", "c"], join: "done" } },
        guards: { g: true },
      } as unknown as PipelineSpec;
      expect((await problemsOf(spec)).map((d) => d.message)).toEqual([
        "stages.a.code: must be a code stage function",
        "stages.b.stage: must be a loaded StageDefinition (from loadStageFile or parseStageDefinition)",
        "stages.c.pipeline: must be a pipeline spec or a path to a pipeline file",
        "guards.g: must be a guard function",
      ]);
      expect(await problemsOf(null as unknown as PipelineSpec)).toMatchObject([
        { file: "pipeline.ts (definePipeline)", code: "Validation/PipelineDefinitionInvalid" },
      ]);
    });

    it("a { stage } entry that is not a whole loaded StageDefinition is refused, never an exception", async () => {
      const plan = await loadStageFile(join(STAGES_DIR, "plan.md"));
      if (!plan.ok) throw new Error("the bundled plan stage must load");
      const { template: _template, ...withoutTemplate } = plan.value;
      const spec = {
        id: "handmade",
        entry: "plan",
        stages: {
          plan: { stage: { id: "plan" } },
          review: { stage: withoutTemplate },
          execute: { stage: { ...plan.value, template: { parts: [{ kind: "placeholder" }] } } },
        },
        next: { plan: "review", review: "execute" },
      } as unknown as PipelineSpec;
      expect((await problemsOf(spec)).map((d) => [d.code, d.message])).toEqual(
        ["plan", "review", "execute"].map((id) => [
          "Validation/PipelineDefinitionInvalid",
          `stages.${id}.stage: must be a loaded StageDefinition (from loadStageFile or parseStageDefinition)`,
        ]),
      );
    });

    it("a condition that contains itself is PipelineDefinitionInvalid, never an exception", async () => {
      const condition: { all: unknown[] } = { all: [{ path: "verdict", equals: "ok" }] };
      condition.all.push(condition);
      const spec = {
        id: "self-condition",
        entry: "a",
        stages: { a: { code: () => ({ verdict: "ok" }) } },
        next: { a: [{ when: condition, to: "done" }] },
      } as unknown as PipelineSpec;
      expect(await problemsOf(spec)).toMatchObject([
        { code: "Validation/PipelineDefinitionInvalid", message: "next.a: contains itself" },
      ]);
    });

    it("a spec that contains itself is PipelineCycle", async () => {
      const spec: PipelineSpec = { id: "loop", entry: "again", stages: {} };
      spec.stages.again = { pipeline: spec };
      expect(await problemsOf(spec)).toMatchObject([
        {
          code: "Validation/PipelineCycle",
          message:
            "stages.again: loop.ts (definePipeline) → loop.ts (definePipeline): a pipeline cannot contain itself",
        },
      ]);
    });

    it("stage files resolve against baseDir, and their problems point into them", async () => {
      const dir = project({});
      const spec = definePipeline({
        id: "bare",
        entry: "plan",
        stages: { plan: { file: "stages/plan.md" } },
      });
      const result = await loadPipeline(spec, { baseDir: dir });
      expect(placesOf(dir, result)).toEqual([
        expect.stringMatching(/^stages\/plan\.md:\d+:\d+ Validation\/StageCtxUnresolved$/),
      ]);
    });
  });
});
