import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile, loadStageFile } from "../../src/definitions/index.js";
import {
  at,
  load,
  loaded,
  MACHINES_DIR,
  PIPELINE,
  placesOf,
  positionOf,
  project,
} from "../support/pipeline-files.js";
import { STAGES_DIR, seedPlan } from "../support/stages.js";

describe("the bundled pipelines", () => {
  it("code-review loads into its pipeline: plan → execute → review, with a bounded rework loop", async () => {
    const result = await loadPipelineFile(join(MACHINES_DIR, "code-review.yaml"));
    const pipeline = loaded(result);
    expect(result.ok && result.warnings).toEqual([]);
    const plan = await loadStageFile(join(STAGES_DIR, "plan.md"));
    expect(pipeline).toMatchObject({
      id: "code-review",
      description: "Plan, implement and review a change",
      context: { type: "object", required: ["task"], properties: { task: { type: "string" } } },
      entry: "plan",
      grants: { approve: ["Bash(git status)"], deny: ["Bash(rm *)"] },
      guards: {},
      hooks: {},
      file: join(MACHINES_DIR, "code-review.yaml"),
    });
    expect(Object.keys(pipeline.stages)).toEqual(["plan", "execute", "review"]);
    expect(pipeline.stages.plan).toEqual({
      kind: "llm",
      id: "plan",
      definition: plan.ok && plan.value,
    });
    expect(pipeline.next).toEqual({
      plan: { kind: "rules", rules: [{ to: "execute" }] },
      execute: { kind: "rules", rules: [{ to: "review" }] },
      review: {
        kind: "rules",
        rules: [
          { when: { path: "output.approved", op: "equals", value: true }, to: "done" },
          { when: { visits: "review", op: "lt", value: 3 }, to: "execute" },
          { to: "fail" },
        ],
      },
    });
  });

  it("code-review-parallel fans execute out to test and lint, fail-fast, joined by review", async () => {
    const result = await loadPipelineFile(join(MACHINES_DIR, "code-review-parallel.yaml"));
    const pipeline = loaded(result);
    expect(result.ok && result.warnings).toEqual([]);
    expect(Object.keys(pipeline.stages)).toEqual(["plan", "execute", "test", "lint", "review"]);
    expect(pipeline.next.execute).toEqual({
      kind: "parallel",
      siblings: ["test", "lint"],
      join: "review",
      policy: { kind: "fail-fast" },
    });
    expect(pipeline.next.test).toBeUndefined();
    expect(pipeline.stages.test).toMatchObject({
      kind: "llm",
      definition: { allowedTools: ["Read", "Grep", "Glob"], completionTool: "submit_test" },
    });
    expect(pipeline.stages.lint).toMatchObject({
      definition: { allowedTools: ["Read", "Grep", "Glob"], completionTool: "submit_lint" },
    });
  });
});

describe("a pipeline file", () => {
  it("takes the join policies, maxConcurrency, command stages and every condition form", async () => {
    const yaml = `id: all-forms
entry: a
stages:
  a: { run: "npm test" }
  b: { run: "npm run lint", timeoutMs: 1000 }
  c: { run: "true" }
  d: { run: "true" }
next:
  a: { parallel: [b, c], join: d, policy: { quorum: 1 }, maxConcurrency: 2 }
  d:
    - when: { all: [{ path: verdict, in: [ok, skip] }, { not: { path: output.x, exists: true } }] }
      to: done
    - when: { any: [{ path: ctx.n, gte: 2 }, { visits: d, equals: 0 }, { path: parsed.y, notEquals: null }] }
      to: fail
    - { when: { path: output.n, lt: "m" }, to: done }
    - to: fail
`;
    const pipeline = loaded((await load(yaml)).result);
    expect(pipeline.context).toEqual({ type: "object" });
    expect(pipeline.stages).toEqual({
      a: { kind: "command", id: "a", command: "npm test", timeoutMs: 600_000 },
      b: { kind: "command", id: "b", command: "npm run lint", timeoutMs: 1000 },
      c: { kind: "command", id: "c", command: "true", timeoutMs: 600_000 },
      d: { kind: "command", id: "d", command: "true", timeoutMs: 600_000 },
    });
    expect(pipeline.next.a).toEqual({
      kind: "parallel",
      siblings: ["b", "c"],
      join: "d",
      policy: { kind: "quorum", k: 1 },
      maxConcurrency: 2,
    });
    expect(pipeline.next.d).toEqual({
      kind: "rules",
      rules: [
        {
          when: {
            all: [
              { path: "verdict", op: "in", value: ["ok", "skip"] },
              { not: { path: "output.x", op: "exists", value: true } },
            ],
          },
          to: "done",
        },
        {
          when: {
            any: [
              { path: "ctx.n", op: "gte", value: 2 },
              { visits: "d", op: "equals", value: 0 },
              { path: "parsed.y", op: "notEquals", value: null },
            ],
          },
          to: "fail",
        },
        { when: { path: "output.n", op: "lt", value: "m" }, to: "done" },
        { to: "fail" },
      ],
    });
  });

  it("takes an LLM stage's output: the completion fields Exit hands on", async () => {
    const yaml = PIPELINE.replace(
      "{ file: ../stages/plan.md }",
      "{ file: ../stages/plan.md, output: [summary, steps] }",
    );
    const pipeline = loaded((await load(yaml)).result);
    expect(pipeline.stages.plan).toMatchObject({ kind: "llm", outputFields: ["summary", "steps"] });
    expect(pipeline.stages.execute).not.toHaveProperty("outputFields");
  });

  it("refuses an output field the completion schema does not declare, at that field", async () => {
    const yaml = PIPELINE.replace(
      "{ file: ../stages/plan.md }",
      "{ file: ../stages/plan.md, output: [summary, reasoning] }",
    );
    const { result, places } = await load(yaml);
    expect(places).toEqual([at(yaml, "reasoning", "Validation/StageOutputFieldUnknown")]);
    expect(result.ok ? [] : result.diagnostics.map((d) => d.message)).toEqual([
      'stages.plan.output[1]: "reasoning" is not a field of submit_plan\'s completionSchema (it declares summary, steps)',
    ]);
  });

  it("takes output only on an LLM stage entry, as a non-empty list of names", async () => {
    const yaml = PIPELINE.replace(
      "{ file: ../stages/plan.md }",
      "{ file: ../stages/plan.md, output: [] }",
    ).replace("{ file: ../stages/execute.md }", '{ run: "make", output: [summary] }');
    const { result } = await load(yaml);
    expect(result.ok ? [] : result.diagnostics.map((d) => [d.line, d.code, d.message])).toEqual([
      [
        7,
        "Validation/PipelineDefinitionInvalid",
        "stages.plan.output: must name at least one field of the completion payload",
      ],
      [
        8,
        "Validation/PipelineDefinitionInvalid",
        "stages.execute.output: only an LLM stage entry (file or stage) takes output",
      ],
    ]);
  });

  it("keeps unknown top-level keys out of the way", async () => {
    const pipeline = loaded(
      (await load(`${PIPELINE}owner: platform-team\nx-docs: { a: 1 }\n`)).result,
    );
    expect(pipeline.id).toBe("small");
  });

  it("takes reopenable: true (a redo reopens a run that ended done); anything but a boolean is refused at the key", async () => {
    expect(loaded((await load(`${PIPELINE}reopenable: true\n`)).result).reopenable).toBe(true);
    expect(loaded((await load(PIPELINE)).result)).not.toHaveProperty("reopenable");
    const yaml = `${PIPELINE}reopenable: yes please\n`;
    expect((await load(yaml)).places).toEqual([
      at(yaml, "reopenable", "Validation/PipelineDefinitionInvalid"),
    ]);
  });

  it.each(["fail-fast", "all-settled", "any"])("takes the %s join policy", async (policy) => {
    const yaml = `id: p\nentry: a\nstages:\n  a: { run: x }\n  b: { run: x }\n  c: { run: x }\nnext:\n  a: { parallel: [b, c], join: done, policy: ${policy} }\n`;
    expect(loaded((await load(yaml)).result).next.a).toMatchObject({ policy: { kind: policy } });
  });

  describe("shape problems, each at the offending key", () => {
    it("a missing id, entry or stages is PipelineMissingField", async () => {
      const { places, result } = await load("description: nothing else\n");
      expect(places).toEqual([
        "machines/p.yaml:1:1 Validation/PipelineMissingField",
        "machines/p.yaml:1:1 Validation/PipelineMissingField",
        "machines/p.yaml:1:1 Validation/PipelineMissingField",
      ]);
      expect(!result.ok && result.diagnostics.map((d) => d.message)).toEqual([
        'missing required field "id"',
        'missing required field "entry"',
        'missing required field "stages"',
      ]);
    });

    it("an id that is not kebab-case is PipelineIdInvalid", async () => {
      const yaml = PIPELINE.replace("id: small", "id: Small_Pipeline");
      const { places, result } = await load(yaml);
      expect(places).toEqual([at(yaml, "id:", "Validation/PipelineIdInvalid")]);
      expect(!result.ok && result.diagnostics[0]?.message).toContain("kebab-case");
    });

    it("an unknown key in a stage entry, transition, condition or grants is an error at that key", async () => {
      const yaml = `${PIPELINE.replace(
        "{ file: ../stages/plan.md }",
        "{ file: ../stages/plan.md, model: big }",
      ).replace(
        "  execute: review\n",
        "  execute:\n    - { when: { path: output.ok, equals: true, because: x }, to: review, note: y }\n",
      )}grants:\n  approve: []\n  allow: ["Read"]\n`;
      const { places, result } = await load(yaml);
      expect(places).toEqual([
        at(yaml, "model", "Validation/PipelineDefinitionInvalid"),
        at(yaml, "because", "Validation/PipelineDefinitionInvalid"),
        at(yaml, "note", "Validation/PipelineDefinitionInvalid"),
        at(yaml, "allow", "Validation/PipelineDefinitionInvalid"),
      ]);
      expect(!result.ok && result.diagnostics.map((d) => d.message)).toEqual([
        'stages.plan: unknown key "model"; a stage entry takes only file, output, pipeline, code, run, timeoutMs, ask',
        'next.execute[0].when: unknown key "because"; a condition takes only path, equals, notEquals, lt, lte, gt, gte, in, exists, visits, all, any, not, guard',
        'next.execute[0]: unknown key "note"; a rule takes only when, to',
        'grants: unknown key "allow"; grants takes only approve, deny, timeout',
      ]);
    });

    it("a stage entry has exactly one of file, pipeline, code, run or ask; timeoutMs only with run", async () => {
      const yaml = PIPELINE.replace(
        "{ file: ../stages/plan.md }",
        "{ file: ../stages/plan.md, run: make }",
      )
        .replace("{ file: ../stages/execute.md }", "{ timeoutMs: 5 }")
        .replace("{ file: ../stages/review.md }", "../stages/review.md");
      const { result } = await load(yaml);
      const problems = result.ok ? [] : result.diagnostics;
      expect(problems.map((d) => [d.line, d.code, d.message])).toEqual([
        [
          7,
          "Validation/PipelineDefinitionInvalid",
          "stages.plan.run: a stage entry has one of file, pipeline, code, run or ask; this one also has file",
        ],
        [
          8,
          "Validation/PipelineDefinitionInvalid",
          "stages.execute: a stage entry needs one of file, pipeline, code, run or ask",
        ],
        [
          8,
          "Validation/PipelineDefinitionInvalid",
          "stages.execute.timeoutMs: only a run entry takes timeoutMs",
        ],
        [9, "Validation/PipelineDefinitionInvalid", "stages.review: must be a stage entry"],
      ]);
    });

    it("a condition has one kind and, for path or visits, exactly one operator", async () => {
      const rules = [
        "{ when: { path: output.ok }, to: done }",
        "{ when: { path: output.ok, equals: 1, lt: 2 }, to: done }",
        "{ when: { path: result.ok, equals: 1 }, to: done }",
        "{ when: { visits: plan, notEquals: 1 }, to: done }",
        "{ when: { visits: plan, lt: 1.5 }, to: done }",
        "{ when: { path: output.ok, exists: maybe }, to: done }",
        "{ when: { path: output.ok, in: 3 }, to: done }",
        "{ when: { not: { path: output.ok, equals: 1 }, equals: 2 }, to: done }",
        "{ when: { path: output.ok, equals: 1, visits: plan }, to: done }",
        "{ when: {}, to: done }",
        "{ when: { all: [] }, to: done }",
      ];
      const yaml = `${PIPELINE.replace("  execute: review\n", "")}  review:\n${rules.map((r) => `    - ${r}\n`).join("")}`;
      const { result } = await load(yaml);
      const problems = result.ok ? [] : result.diagnostics;
      const line = (rule: number) => 13 + rule;
      expect(problems.map((d) => [d.line, d.code, d.message])).toEqual([
        [
          line(0),
          "Validation/PipelineDefinitionInvalid",
          "next.review[0].when.path: path needs one operator: equals, notEquals, lt, lte, gt, gte, in, exists",
        ],
        [
          line(1),
          "Validation/PipelineDefinitionInvalid",
          "next.review[1].when.lt: a condition has one operator; this one also has equals",
        ],
        [
          line(2),
          "Validation/PipelineDefinitionInvalid",
          "next.review[2].when.path: must be a dotted path under verdict, output, parsed, ctx or error",
        ],
        [
          line(3),
          "Validation/PipelineDefinitionInvalid",
          "next.review[3].when.notEquals: visits compares with equals, lt, lte, gt, gte",
        ],
        [
          line(4),
          "Validation/PipelineDefinitionInvalid",
          "next.review[4].when.lt: a visit count is a whole number, 0 or more",
        ],
        [
          line(5),
          "Validation/PipelineDefinitionInvalid",
          "next.review[5].when.exists: takes true or false",
        ],
        [
          line(6),
          "Validation/PipelineDefinitionInvalid",
          "next.review[6].when.in: takes a list of values",
        ],
        [
          line(7),
          "Validation/PipelineDefinitionInvalid",
          "next.review[7].when.equals: equals compares a path or visits; this condition has not",
        ],
        [
          line(8),
          "Validation/PipelineDefinitionInvalid",
          "next.review[8].when.visits: a condition has one of path, visits, all, any, not, guard; this one also has path",
        ],
        [
          line(9),
          "Validation/PipelineDefinitionInvalid",
          "next.review[9].when: a condition needs one of path, visits, all, any, not, guard",
        ],
        [
          line(10),
          "Validation/PipelineDefinitionInvalid",
          "next.review[10].when.all: takes a list of conditions",
        ],
      ]);
    });

    it("a transition is a target, a non-empty list of rules, or a parallel group", async () => {
      const yaml = PIPELINE.replace("  plan: execute", "  plan: 3").replace(
        "  execute: review",
        "  execute: []",
      );
      const { places, result } = await load(yaml);
      expect(places).toEqual([
        at(yaml, "plan: 3", "Validation/PipelineDefinitionInvalid"),
        at(yaml, "execute: []", "Validation/PipelineDefinitionInvalid"),
      ]);
      expect(!result.ok && result.diagnostics.map((d) => d.message)).toContain(
        "next.plan: must be a target (a stage id, done or fail), a list of rules, a parallel group or a map group",
      );
    });

    it("a parallel group needs its join; policies and maxConcurrency are checked", async () => {
      const yaml = PIPELINE.replace(
        "  execute: review",
        "  execute: { parallel: [plan, review], policy: most, maxConcurrency: 0 }",
      );
      const { result } = await load(yaml);
      const problems = result.ok ? [] : result.diagnostics;
      expect(problems.map((d) => [`${d.line}:${d.column}`, d.code, d.message])).toEqual([
        [
          positionOf(yaml, "execute: { parallel"),
          "Validation/PipelineMissingField",
          'missing required field "next.execute.join"',
        ],
        [
          positionOf(yaml, "policy"),
          "Validation/PipelineDefinitionInvalid",
          "next.execute.policy: must be fail-fast, all-settled, any or { quorum: k }",
        ],
        [
          positionOf(yaml, "maxConcurrency"),
          "Validation/PipelineDefinitionInvalid",
          "next.execute.maxConcurrency: must be at least 1",
        ],
      ]);
    });

    it("a grant rule must be Tool or Tool(pattern): PipelineGrantRuleInvalid", async () => {
      const yaml = `${PIPELINE}grants:\n  approve: ["Bash(git status)", "Read", "mcp__*"]\n  deny: ["Bash(rm *", "rm -rf"]\n`;
      const { places } = await load(yaml);
      expect(places).toEqual([
        at(yaml, '"Bash(rm *"', "Validation/PipelineGrantRuleInvalid"),
        at(yaml, '"rm -rf"', "Validation/PipelineGrantRuleInvalid"),
      ]);
    });

    it("a stage key must be a kebab-case id, and not done or fail", async () => {
      const yaml = `id: p\nentry: Build\nstages:\n  Build: { run: make }\n  done: { run: x }\n`;
      const { places } = await load(yaml);
      expect(places).toEqual([
        at(yaml, "Build:", "Validation/StageIdInvalid"),
        at(yaml, "done:", "Validation/PipelineDefinitionInvalid"),
        at(yaml, "done:", "Validation/StageUnreachable"),
      ]);
    });

    it("a pipeline that is not a mapping, or has no stages, says so", async () => {
      expect((await load("- a\n- b\n")).places).toEqual([
        "machines/p.yaml:1:1 Validation/PipelineDefinitionInvalid",
      ]);
      expect((await load("id: p\nentry: a\nstages: {}\n")).places).toEqual([
        "machines/p.yaml:2:1 Validation/PipelineEntryUnknown",
        "machines/p.yaml:3:1 Validation/PipelineDefinitionInvalid",
      ]);
    });
  });

  describe("as a file", () => {
    it("broken YAML, duplicate keys included, is PipelineYamlInvalid at the place", async () => {
      const { places } = await load(`${PIPELINE}entry: review\n`);
      expect(places).toEqual(["machines/p.yaml:13:1 Validation/PipelineYamlInvalid"]);
      expect((await load("id: [unclosed\n")).places).toEqual([
        expect.stringMatching(/^machines\/p\.yaml:\d+:\d+ Validation\/PipelineYamlInvalid$/),
      ]);
    });

    it("an alias inside the node it names is PipelineYamlInvalid, not an endless schema check", async () => {
      const yaml = PIPELINE.replace(
        "properties: { task: { type: string } }",
        "properties: &p { task: { type: string }, more: { properties: *p } }",
      );
      const { places, result } = await load(yaml);
      expect(places).toEqual([at(yaml, "*p", "Validation/PipelineYamlInvalid")]);
      expect(!result.ok && result.diagnostics[0]?.message).toBe(
        "broken YAML: *p refers to a node that contains it, which would make the data infinite",
      );
    });

    it("an alias to no anchor, and an alias bomb, are PipelineYamlInvalid at the alias, never a throw", async () => {
      const dangling = PIPELINE.replace("entry: plan", "entry: *nowhere");
      expect((await load(dangling)).places).toEqual([
        at(dangling, "*nowhere", "Validation/PipelineYamlInvalid"),
      ]);
      const levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
      for (let i = 1; i < 9; i++) {
        const [name, previous] = [String.fromCharCode(97 + i), String.fromCharCode(96 + i)];
        levels.push(`${name}: &${name} [${Array(10).fill(`*${previous}`).join(", ")}]`);
      }
      const { result } = await load(`${PIPELINE}bomb:
  ${levels.join("\n  ")}
`);
      expect(!result.ok && result.diagnostics[0]?.message).toMatch(/alias count/i);
    });

    it("a missing file is StageFileUnreadable; a file not named .yaml or .yml is PipelineFileNotYaml", async () => {
      const dir = project({ "machines/p.json": "{}" });
      expect(placesOf(dir, await loadPipelineFile(join(dir, "machines/none.yaml")))).toEqual([
        "machines/none.yaml:1:1 Validation/StageFileUnreadable",
      ]);
      expect(placesOf(dir, await loadPipelineFile(join(dir, "machines/p.json")))).toEqual([
        "machines/p.json:1:1 Validation/PipelineFileNotYaml",
      ]);
      mkdirSync(join(dir, "machines/dir.yaml"));
      const directory = await loadPipelineFile(join(dir, "machines/dir.yaml"));
      expect(!directory.ok && directory.diagnostics[0]?.message).toBe(
        "is a directory, not a pipeline file",
      );
    });

    it("a stage file that fails to load brings its own diagnostics and one at the file: key", async () => {
      const broken = "---\nid: plan\nname: Plan\n---\nbody\n";
      const { places, result } = await load(PIPELINE, { "stages/plan.md": broken });
      expect(places.filter((p) => p.startsWith("machines/"))).toEqual([
        at(PIPELINE, "file: ../stages/plan.md", "Validation/PipelineStageInvalid"),
      ]);
      const missing = [
        "allowedTools",
        "completionTool",
        "completionSchema",
        "retryPolicy",
        "turnCap",
        "resolutionPolicy",
      ];
      expect(places.filter((p) => p.startsWith("stages/plan.md"))).toEqual(
        missing.map(() => "stages/plan.md:1:1 Validation/StageMissingField"),
      );
      expect(
        !result.ok && result.diagnostics.find((d) => d.file.endsWith("p.yaml"))?.message,
      ).toMatch(/^stages\.plan: .*stages\/plan\.md did not load; its problems are reported in it$/);
    });

    it("a stage file's warnings become the pipeline's warnings", async () => {
      const bodiless = seedPlan.slice(0, seedPlan.lastIndexOf("---") + 4);
      const { result, places } = await load(PIPELINE, { "stages/plan.md": bodiless });
      expect(result.ok).toBe(true);
      const bodyLine = bodiless.split("\n").length;
      expect(places).toEqual([`stages/plan.md:${bodyLine}:1 Validation/StageBodyEmpty`]);
    });
  });

  describe("sub-pipelines", () => {
    const child = `id: child\ncontext: { type: object, properties: { task: { type: string } } }\nentry: plan\nstages:\n  plan: { file: ../../stages/plan.md }\n`;

    it("load relative to the including file, as nested definitions", async () => {
      const yaml = PIPELINE.replace(
        "{ file: ../stages/review.md }",
        "{ pipeline: ./sub/child.yaml }",
      );
      const pipeline = loaded((await load(yaml, { "machines/sub/child.yaml": child })).result);
      expect(pipeline.stages.review).toMatchObject({
        kind: "pipeline",
        id: "review",
        pipeline: { id: "child", entry: "plan", stages: { plan: { kind: "llm" } } },
      });
    });

    it("an invalid sub-pipeline brings its diagnostics and one at the pipeline: key", async () => {
      const yaml = PIPELINE.replace(
        "{ file: ../stages/review.md }",
        "{ pipeline: ./sub/child.yaml }",
      );
      const { places } = await load(yaml, {
        "machines/sub/child.yaml": child.replace("entry: plan", "entry: nope"),
      });
      expect(places).toEqual([
        at(yaml, "pipeline: ./sub/child.yaml", "Validation/PipelineStageInvalid"),
        "machines/sub/child.yaml:3:1 Validation/PipelineEntryUnknown",
      ]);
    });

    it("a sub-pipeline's entry receives what its stage receives: after a stage, {{ctx.upstream[0]}} but no [1]", async () => {
      const peek = (index: number) =>
        seedPlan
          .replace("id: plan", "id: peek")
          .replace("Task: {{ctx.task}}", `Before: {{ctx.upstream[${index}].output}}`);
      const sub = `id: sub\nentry: peek\nstages:\n  peek: { file: ../../stages/peek.md }\n`;
      const yaml = PIPELINE.replace(
        "{ file: ../stages/review.md }",
        "{ pipeline: ./sub/peek.yaml }",
      );
      const loadWith = (index: number) =>
        load(yaml, { "machines/sub/peek.yaml": sub, "stages/peek.md": peek(index) });
      const first = await loadWith(0);
      expect(first.result.ok).toBe(true);
      expect(placesOf(first.dir, first.result)).toEqual([]);
      const second = await loadWith(1);
      expect(placesOf(second.dir, second.result)).toContain(
        `stages/peek.md:${positionOf(peek(1), "{{ctx.upstream")} Validation/StageCtxUnresolved`,
      );
    });

    it("a pipeline that contains itself is PipelineCycle, at the entry that closes the loop", async () => {
      const a = `id: a\nentry: b\nstages:\n  b: { pipeline: ./b.yaml }\n`;
      const b = `id: b\nentry: a\nstages:\n  a: { pipeline: ./a.yaml }\n`;
      const dir = project({ "machines/a.yaml": a, "machines/b.yaml": b });
      const result = await loadPipelineFile(join(dir, "machines/a.yaml"));
      expect(placesOf(dir, result)).toEqual([
        "machines/a.yaml:4:8 Validation/PipelineStageInvalid",
        "machines/b.yaml:4:8 Validation/PipelineCycle",
      ]);
      expect(!result.ok && result.diagnostics[1]?.message).toBe(
        `stages.a: ${join(dir, "machines/a.yaml")} → ${join(dir, "machines/b.yaml")} → ${join(dir, "machines/a.yaml")}: a pipeline cannot contain itself`,
      );
      const self = project({
        "machines/self.yaml": "id: self\nentry: me\nstages:\n  me: { pipeline: self.yaml }\n",
      });
      expect(placesOf(self, await loadPipelineFile(join(self, "machines/self.yaml")))).toEqual([
        "machines/self.yaml:4:9 Validation/PipelineCycle",
      ]);
    });

    it("a file used by two entries is loaded once, and its problems are reported once", async () => {
      const yaml =
        "id: twice\nentry: one\nstages:\n  one: { pipeline: ./child.yaml }\n  two: { pipeline: ./child.yaml }\nnext:\n  one: two\n";
      const sibling = child.replace("../../stages/plan.md", "../stages/plan.md");
      const good = await load(yaml, { "machines/child.yaml": sibling });
      const { one, two } = loaded(good.result).stages;
      expect(
        one?.kind === "pipeline" && two?.kind === "pipeline" && one.pipeline === two.pipeline,
      ).toBe(true);

      const broken = await load(yaml, {
        "machines/child.yaml": sibling.replace("plan.md", "missing.md"),
      });
      expect(broken.places).toEqual([
        "machines/child.yaml:5:11 Validation/PipelineStageInvalid",
        "machines/p.yaml:4:10 Validation/PipelineStageInvalid",
        "machines/p.yaml:5:10 Validation/PipelineStageInvalid",
        "stages/missing.md:1:1 Validation/StageFileUnreadable",
      ]);
    });
  });
});
