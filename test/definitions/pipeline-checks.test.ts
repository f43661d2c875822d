import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/index.js";
import {
  at,
  load,
  loaded,
  PIPELINE,
  placesOf,
  positionOf,
  project,
} from "../support/pipeline-files.js";
import { STAGES_DIR, seedPlan } from "../support/stages.js";

/** PIPELINE with its `next` block replaced. */
const withNext = (next: string) => `${PIPELINE.slice(0, PIPELINE.indexOf("next:"))}next:\n${next}`;

/** Four command stages, a to d, and the given `next` block: topology without stage files. */
const commands = (next: string) =>
  `id: p\nentry: a\nstages:\n  a: { run: x }\n  b: { run: x }\n  c: { run: x }\n  d: { run: x }\nnext:\n${next}`;

const messagesOf = (result: Awaited<ReturnType<typeof load>>["result"]) =>
  (result.ok ? result.warnings : result.diagnostics).map((d) => d.message);

describe("pipeline checks", () => {
  it("the key under stages must equal its stage file's id: StageIdMismatch", async () => {
    const yaml = PIPELINE.replace("../stages/plan.md", "../stages/planning.md");
    const planning = seedPlan.replace("id: plan", "id: planning");
    const { places, result } = await load(yaml, { "stages/planning.md": planning });
    expect(places).toEqual([at(yaml, "plan: {", "Validation/StageIdMismatch")]);
    expect(messagesOf(result)).toEqual([
      expect.stringMatching(
        /^stages\.plan: the key must equal the id of its stage \(.*stages\/planning\.md has id "planning"\)$/,
      ),
    ]);
  });

  it("an entry that names no stage is PipelineEntryUnknown", async () => {
    const yaml = PIPELINE.replace("entry: plan", "entry: plna");
    const { places, result } = await load(yaml);
    expect(places).toEqual([at(yaml, "entry:", "Validation/PipelineEntryUnknown")]);
    expect(messagesOf(result)).toEqual([
      'entry "plna" names no stage; the stages are plan, execute, review',
    ]);
  });

  describe("PipelineTargetUnknown", () => {
    it("a target that names no stage, done, fail or cancel, at the transition", async () => {
      const yaml = withNext("  plan: execute\n  execute: reveiw\n");
      const { places, result } = await load(yaml);
      expect(places).toEqual([
        at(yaml, "review: {", "Validation/StageUnreachable"),
        at(yaml, "execute: reveiw", "Validation/PipelineTargetUnknown"),
      ]);
      expect(messagesOf(result)[1]).toBe(
        'next.execute: "reveiw" is not a stage of this pipeline, done, fail or cancel',
      );
    });

    it("a rule's target, at its to: key", async () => {
      const yaml = withNext(
        "  plan: execute\n  execute:\n    - { when: { path: verdict, equals: ok }, to: reveiw }\n    - { to: review }\n",
      );
      const { places } = await load(yaml);
      expect(places).toEqual([at(yaml, "to: reveiw", "Validation/PipelineTargetUnknown")]);
    });

    it("a transition from a stage that does not exist", async () => {
      const yaml = `${PIPELINE}  revew: done\n`;
      const { places, result } = await load(yaml);
      expect(places).toEqual([at(yaml, "revew:", "Validation/PipelineTargetUnknown")]);
      expect(messagesOf(result)).toEqual(['next.revew: there is no stage "revew" to leave']);
    });

    it("visits naming no stage, inside any nesting of all, any and not", async () => {
      const yaml = withNext(
        "  plan: execute\n  execute: review\n  review:\n    - { when: { not: { any: [{ visits: reviews, lt: 3 }] } }, to: done }\n    - { to: fail }\n",
      );
      const { places, result } = await load(yaml);
      expect(places).toEqual([at(yaml, "visits: reviews", "Validation/PipelineTargetUnknown")]);
      expect(messagesOf(result)).toEqual([
        'next.review[0].when.not.any[0].visits: "reviews" is not a stage of this pipeline',
      ]);
    });

    it("a parallel sibling naming no stage", async () => {
      const yaml = commands("  a: { parallel: [b, cc], join: d }\n");
      const { places } = await load(yaml);
      expect(places).toEqual([
        at(yaml, "c: {", "Validation/StageUnreachable"),
        at(yaml, "cc", "Validation/PipelineTargetUnknown"),
      ]);
    });
  });

  it("a join naming an undeclared stage is StageJoinDangling; fail is no join either", async () => {
    for (const join of ["dd", "fail"]) {
      const yaml = commands(`  a: { parallel: [b, c], join: ${join} }\n`);
      const { places, result } = await load(yaml);
      expect(places).toEqual([
        at(yaml, "d: {", "Validation/StageUnreachable"),
        at(yaml, "join:", "Validation/StageJoinDangling"),
      ]);
      expect(messagesOf(result)[1]).toBe(
        `next.a.join: "${join}" names no stage of this pipeline; a join is a stage id or done`,
      );
    }
  });

  describe("parallel groups", () => {
    it("fewer than two siblings is ExtensionHost/InvalidParallelPlan", async () => {
      for (const siblings of ["[b]", "[]"]) {
        const yaml = commands(`  a: { parallel: ${siblings}, join: d }\n`);
        const { places, result } = await load(yaml);
        expect(places).toContain(at(yaml, "parallel:", "ExtensionHost/InvalidParallelPlan"));
        expect(messagesOf(result)).toContain(
          `next.a.parallel: a parallel group runs at least two siblings, this one ${siblings === "[]" ? 0 : 1}; use a plain successor for one`,
        );
      }
    });

    it("a sibling listed twice, fanning out to itself, or in two groups is InvalidParallelPlan", async () => {
      const yaml = commands(
        "  a: { parallel: [b, c, b, a], join: d }\n  d: { parallel: [c, b], join: done }\n",
      );
      const { result } = await load(yaml);
      const found = result.ok ? [] : result.diagnostics;
      expect(found.map((d) => [`${d.line}:${d.column}`, d.code, d.message])).toEqual([
        ["9:25", "ExtensionHost/InvalidParallelPlan", 'next.a.parallel[2]: "b" is listed twice'],
        [
          "9:28",
          "ExtensionHost/InvalidParallelPlan",
          "next.a.parallel[3]: a cannot fan out to itself",
        ],
        [
          "10:19",
          "ExtensionHost/InvalidParallelPlan",
          'next.d.parallel[0]: "c" is already a sibling in the group after a; a stage belongs to one parallel group',
        ],
        [
          "10:22",
          "ExtensionHost/InvalidParallelPlan",
          'next.d.parallel[1]: "b" is already a sibling in the group after a; a stage belongs to one parallel group',
        ],
      ]);
    });

    it("a sibling with its own transition is PipelineDefinitionInvalid at that transition", async () => {
      const yaml = commands("  a: { parallel: [b, c], join: d }\n  b: done\n");
      const { places, result } = await load(yaml);
      expect(places).toEqual([at(yaml, "b: done", "Validation/PipelineDefinitionInvalid")]);
      expect(messagesOf(result)).toEqual([
        "next.b: b is a parallel sibling (after a), so it has no transition of its own; the group's join decides what runs next",
      ]);
    });

    it("quorum k must be between 1 and the number of siblings", async () => {
      for (const [k, valid] of [
        [0, false],
        [1, true],
        [2, true],
        [3, false],
      ] as const) {
        const yaml = commands(`  a: { parallel: [b, c], join: d, policy: { quorum: ${k} } }\n`);
        const { places } = await load(yaml);
        expect(places).toEqual(
          valid ? [] : [at(yaml, "quorum", "Validation/PipelineDefinitionInvalid")],
        );
      }
    });
  });

  describe("the topology", () => {
    it("a stage the entry never reaches is a StageUnreachable warning; the pipeline still loads", async () => {
      const yaml = withNext("  plan: review\n");
      const { places, result } = await load(yaml);
      expect(result.ok).toBe(true);
      expect(places).toEqual([at(yaml, "execute: {", "Validation/StageUnreachable")]);
    });

    it("a stage with no path to done or fail is a StageNoExit warning", async () => {
      const yaml = withNext(
        "  plan: execute\n  execute: review\n  review:\n    - { when: { visits: review, lt: 3 }, to: execute }\n",
      );
      const { places, result } = await load(yaml);
      expect(result.ok).toBe(true);
      expect(places).toEqual([
        at(yaml, "plan: execute", "Validation/StageNoExit"),
        at(yaml, "execute: review", "Validation/StageNoExit"),
        at(yaml, "review:", "Validation/StageNoExit", "execute: review"),
      ]);
      expect(messagesOf(result)[0]).toBe(
        "next.plan: no path from plan leads to done or fail; a run that gets here can only end when no rule matches",
      );
    });

    it("a stage without a transition ends the pipeline, which is an exit", async () => {
      expect((await load(PIPELINE)).places).toEqual([]);
    });

    it("a loop whose every transition is unconditional is PipelineUnboundedLoop", async () => {
      const yaml = withNext("  plan: execute\n  execute: review\n  review: execute\n");
      const { places, result } = await load(yaml);
      expect(places.filter((p) => !p.endsWith("StageNoExit"))).toEqual([
        at(yaml, "execute: review", "Validation/PipelineUnboundedLoop"),
      ]);
      expect(result.ok).toBe(false);
      expect(messagesOf(result).find((m) => m.includes("repeats forever"))).toMatch(
        /^next\.execute: execute → review → execute repeats forever/,
      );
    });

    it("a stage that always goes back to itself, or a group that always joins back, loops forever", async () => {
      const self = withNext("  plan: plan\n");
      expect((await load(self)).places).toContain(
        at(self, "plan: plan", "Validation/PipelineUnboundedLoop"),
      );
      const group = commands("  a: { parallel: [b, c], join: d }\n  d: a\n");
      expect((await load(group)).places).toContain(
        at(group, "a: {", "Validation/PipelineUnboundedLoop", "next:"),
      );
    });

    it("a loop with a condition on it is bounded", async () => {
      const yaml = withNext(
        "  plan: execute\n  execute: review\n  review:\n    - { when: { visits: review, lt: 3 }, to: execute }\n    - { to: done }\n",
      );
      expect((await load(yaml)).places).toEqual([]);
    });
  });

  describe("what the stages need from the host and the pipeline", () => {
    it("allowedTools naming a tool the host lacks is UnknownTool, at the entry in the stage file", async () => {
      const { dir, result } = await load(PIPELINE, {}, ["Read", "Edit", "Write"]);
      const execute = readFileSync(join(STAGES_DIR, "execute.md"), "utf8");
      expect(placesOf(dir, result)).toEqual([
        `stages/execute.md:${positionOf(execute, '"Grep"')} Validation/UnknownTool`,
        `stages/execute.md:${positionOf(execute, '"Glob"')} Validation/UnknownTool`,
        `stages/plan.md:${positionOf(seedPlan, '"Grep"')} Validation/UnknownTool`,
        `stages/plan.md:${positionOf(seedPlan, '"Glob"')} Validation/UnknownTool`,
      ]);
      expect(!result.ok && result.diagnostics[2]?.message).toBe(
        'allowedTools names "Grep", which the host running pipeline small does not have (its tools: Read, Edit, Write)',
      );
    });

    it("a completion tool named like a host tool is CompletionToolCollision, at completionTool", async () => {
      const { dir, result } = await load(PIPELINE, {}, [
        "Read",
        "Grep",
        "Glob",
        "Edit",
        "Write",
        "submit_plan",
      ]);
      const line = seedPlan.split("\n").findIndex((l) => l.startsWith("completionTool")) + 1;
      expect(placesOf(dir, result)).toEqual([
        `stages/plan.md:${line}:1 Validation/CompletionToolCollision`,
      ]);
    });

    it("a ctx field the context schema does not declare is StageCtxUnresolved, at the placeholder", async () => {
      const yaml = PIPELINE.replace(
        "properties: { task: { type: string } }",
        "properties: { ticket: { type: string } }",
      );
      const { dir, result } = await load(yaml);
      const inPlan = placesOf(dir, result).filter((p) => p.startsWith("stages/plan.md"));
      expect(inPlan).toEqual([
        `stages/plan.md:${positionOf(seedPlan, "{{ctx.task}}")} Validation/StageCtxUnresolved`,
      ]);
      expect(
        !result.ok && result.diagnostics.find((d) => d.file.endsWith("plan.md"))?.message,
      ).toBe(
        "{{ctx.task}} reads ctx.task, which the context schema of pipeline small does not declare (it declares ticket)",
      );
    });

    it("{{ctx.override.reason}} and {{ctx.override.from}} need no context field: the engine sets them", async () => {
      const plan = seedPlan.replace(
        "Task: {{ctx.task}}",
        "Task: {{ctx.task}}\nOverridden from {{ctx.override.from}}: {{ctx.override.reason}}",
      );
      const { places, result } = await load(PIPELINE, { "stages/plan.md": plan });
      expect(result.ok).toBe(true);
      expect(places).toEqual([]);
    });

    it("the same stage file in two pipelines: each reports its own problems", async () => {
      const declares = PIPELINE;
      const lacks = PIPELINE.replace("id: small", "id: bare").replace(/context:\n.*\n.*\n/, "");
      const dir = project({ "machines/declares.yaml": declares, "machines/lacks.yaml": lacks });
      const good = await loadPipelineFile(join(dir, "machines/declares.yaml"));
      const bad = await loadPipelineFile(join(dir, "machines/lacks.yaml"));
      expect(placesOf(dir, good)).toEqual([]);
      expect(placesOf(dir, bad)).toEqual([
        expect.stringMatching(/^stages\/execute\.md:\d+:\d+ Validation\/StageCtxUnresolved$/),
        `stages/plan.md:${positionOf(seedPlan, "{{ctx.task}}")} Validation/StageCtxUnresolved`,
        expect.stringMatching(/^stages\/review\.md:\d+:\d+ Validation\/StageCtxUnresolved$/),
      ]);
      expect(!bad.ok && bad.diagnostics[1]?.message).toContain(
        "pipeline bare does not declare (it declares none)",
      );
    });

    it("{{ctx.upstream[i]}} beyond what a stage receives is StageCtxUnresolved, for each way in", async () => {
      const peek = (index: number) =>
        seedPlan
          .replace("id: plan", "id: peek")
          .replace("Task: {{ctx.task}}", `Before: {{ctx.upstream[${index}].output}}`);
      const stages = `id: p\nentry: plan\nstages:\n  plan: { run: x }\n  other: { run: x }\n  peek: { file: ../stages/peek.md }\n`;
      const cases = [
        ["  plan: peek\n", 0, true],
        ["  plan: peek\n", 1, false],
        ["  plan: { parallel: [peek, other], join: done }\n", 0, false],
        ["  plan: { parallel: [other, plan2], join: peek }\n", 1, true],
        ["  plan: { parallel: [other, plan2], join: peek }\n", 2, false],
      ] as const;
      for (const [next, index, valid] of cases) {
        const yaml = `${stages}  plan2: { run: x }\nnext:\n${next}`;
        const { dir, result } = await load(yaml, { "stages/peek.md": peek(index) });
        const found = placesOf(dir, result).filter((p) => p.includes("StageCtxUnresolved"));
        const where = `stages/peek.md:${positionOf(peek(index), "{{ctx.upstream")} Validation/StageCtxUnresolved`;
        expect(found, `${next} upstream[${index}]`).toEqual(valid ? [] : [where]);
      }
      const sibling = await load(
        `${stages}next:\n  plan: { parallel: [peek, other], join: done }\n`,
        {
          "stages/peek.md": peek(0),
        },
      );
      expect(messagesOf(sibling.result)).toContain(
        "{{ctx.upstream[0].output}} has no value when peek runs as a parallel sibling after plan: it then receives 0 upstream results",
      );
    });

    it("a join may index only the results its policy guarantees, and the entry none", async () => {
      const peek = (index: number) =>
        seedPlan
          .replace("id: plan", "id: peek")
          .replace("Task: {{ctx.task}}", `Before: {{ctx.upstream[${index}].output}}`);
      const commands = ["a", "b", "c", "d"].map((id) => `  ${id}: { run: x }\n`).join("");
      const stages = `stages:\n${commands}  peek: { file: ../stages/peek.md }\n`;
      const group = (policy: string) =>
        `entry: a\n${stages}next:\n  a: { parallel: [b, c, d], join: peek, policy: ${policy} }\n`;
      const cases = [
        [group("fail-fast"), 2, true],
        [group("fail-fast"), 3, false],
        [group("all-settled"), 2, true],
        [group("any"), 0, true],
        [group("any"), 1, false],
        [group("{ quorum: 2 }"), 1, true],
        [group("{ quorum: 2 }"), 2, false],
        [`entry: peek\n${stages}next:\n  peek: a\n`, 0, false],
        [
          `entry: a\n${stages}next:\n  a: peek\n  peek: [{ when: { visits: peek, lt: 2 }, to: a }]\n`,
          0,
          true,
        ],
      ] as const;
      for (const [yaml, index, valid] of cases) {
        const { dir, result } = await load(`id: p\n${yaml}`, { "stages/peek.md": peek(index) });
        const found = placesOf(dir, result).filter((p) => p.includes("StageCtxUnresolved"));
        const where = `stages/peek.md:${positionOf(peek(index), "{{ctx.upstream")} Validation/StageCtxUnresolved`;
        expect(found, `${yaml} upstream[${index}]`).toEqual(valid ? [] : [where]);
      }
      const messages = async (yaml: string) =>
        messagesOf((await load(`id: p\n${yaml}`, { "stages/peek.md": peek(1) })).result);
      expect(await messages(group("any"))).toContain(
        "{{ctx.upstream[1].output}} has no value when peek runs as the join of b, c, d under policy any: it is then sure of 1 upstream result only",
      );
      expect(await messages(`entry: peek\n${stages}next:\n  peek: a\n`)).toContain(
        "{{ctx.upstream[1].output}} has no value when peek runs as the entry of pipeline p: it then receives 0 upstream results",
      );
    });

    it("a sub-pipeline's entry may index what its pipeline stage is entered with", async () => {
      const peek = seedPlan
        .replace("id: plan", "id: peek")
        .replace("Task: {{ctx.task}}", "Before: {{ctx.upstream[0].output.summary}}");
      const sub = "id: inner\nentry: peek\nstages:\n  peek: { file: ../stages/peek.md }\n";
      const commands = "  a: { run: x }\n  b: { run: x }\n";
      const stages = `stages:\n${commands}  sub: { pipeline: ./inner.yaml }\n`;
      const files = { "stages/peek.md": peek, "machines/inner.yaml": sub };
      const unresolved = (places: string[]) => places.filter((p) => p.includes("CtxUnresolved"));
      const after = await load(`id: p\nentry: a\n${stages}next:\n  a: sub\n  sub: b\n`, files);
      expect(after.result.ok).toBe(true);
      expect(after.places).toEqual([]);
      const joined = await load(
        `id: p\nentry: a\n${stages}next:\n  a: { parallel: [b, c], join: sub }\n`.replace(
          "  sub:",
          "  c: { run: x }\n  sub:",
        ),
        files,
      );
      expect(joined.result.ok).toBe(true);
      expect(unresolved(joined.places)).toEqual([]);

      const sibling = await load(
        `id: p\nentry: a\n${stages}next:\n  a: { parallel: [b, sub], join: done }\n`,
        files,
      );
      expect(sibling.result.ok).toBe(false);
      const where = `stages/peek.md:${positionOf(peek, "{{ctx.upstream")} Validation/StageCtxUnresolved`;
      expect(sibling.places).toEqual([where]);
      expect(messagesOf(sibling.result)).toEqual([
        "{{ctx.upstream[0].output.summary}} has no value when peek runs as the entry of pipeline inner (stage sub), entered as a parallel sibling after a: it then receives 0 upstream results",
      ]);

      // By itself the sub-pipeline's entry receives nothing: said, as a warning only.
      const alone = await loadPipelineFile(join(after.dir, "machines/inner.yaml"));
      expect(alone.ok).toBe(true);
      expect(alone.ok && alone.warnings.map((d) => [d.severity, d.message])).toEqual([
        [
          "warning",
          "{{ctx.upstream[0].output.summary}} has no value when peek runs as the entry of pipeline inner: it then receives 0 upstream results",
        ],
      ]);
    });

    it("a join that names one of its own siblings is InvalidParallelPlan", async () => {
      const yaml = commands("  a: { parallel: [b, c, d], join: c }\n");
      const { places, result } = await load(yaml);
      expect(places).toEqual([at(yaml, "join: c", "ExtensionHost/InvalidParallelPlan")]);
      expect(messagesOf(result)).toEqual([
        'next.a.join: "c" is a sibling of this group; a join runs after the group, as a stage of its own',
      ]);
    });

    it("an invalid context schema is PipelineContextInvalid, at the keyword", async () => {
      const notObject = PIPELINE.replace("type: object", "type: string");
      expect((await load(notObject)).places).toContain(
        at(notObject, "context:", "Validation/PipelineContextInvalid"),
      );
      const strict = PIPELINE.replace(
        "properties: { task: { type: string } }",
        "properties: { task: { type: strin } }",
      );
      expect((await load(strict)).places).toContain(
        at(strict, "type: strin", "Validation/PipelineContextInvalid"),
      );
    });
  });

  it("a guard the pipeline does not define is GuardUnknown, naming the guards it has", async () => {
    const yaml = withNext(
      "  plan: execute\n  execute:\n    - { when: { guard: approved }, to: review }\n    - { to: fail }\n",
    );
    const { places, result } = await load(yaml);
    expect(places).toEqual([at(yaml, "guard:", "Validation/GuardUnknown")]);
    expect(messagesOf(result)[0]).toContain("the pipeline's guards are none");
  });

  it("reports every problem at once", async () => {
    const yaml = `id: Bad
entry: nowhere
stages:
  plan: { file: ../stages/plan.md }
  lone: { run: x }
next:
  plan: { parallel: [lone], join: nope }
  ghost: done
`;
    const codes = (await load(yaml)).places.map((p) => p.split(" ")[1]);
    expect(codes).toEqual([
      "Validation/PipelineIdInvalid",
      "Validation/PipelineEntryUnknown",
      "ExtensionHost/InvalidParallelPlan",
      "Validation/StageJoinDangling",
      "Validation/PipelineTargetUnknown",
      "Validation/StageCtxUnresolved",
    ]);
  });
});

describe("a loaded pipeline", () => {
  it("is plain data the compiler can use: stage definitions, transitions, grants", async () => {
    const pipeline = loaded((await load(PIPELINE)).result);
    expect(pipeline.next).toEqual({
      plan: { kind: "rules", rules: [{ to: "execute" }] },
      execute: { kind: "rules", rules: [{ to: "review" }] },
    });
    expect(pipeline.grants).toEqual({ approve: [], deny: [] });
  });
});
