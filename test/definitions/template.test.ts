import { describe, expect, it } from "vitest";
import { parseTemplate, renderTemplate, type TemplateScope } from "../../src/definitions/index.js";

const scope: TemplateScope = {
  ctx: {
    task: "refactor auth module",
    files: ["src/auth.ts", "src/token.ts"],
    limits: { maxLines: 400, strict: true },
    empty: "",
    nothing: null,
    workflowRunId: "run-1",
    stageExecutionId: "run-1/plan/1",
    upstream: [
      { stageId: "plan", verdict: "ok", output: { summary: "Split it", steps: ["a", "b"] } },
    ],
  },
  stage: { id: "execute", name: "Execute" },
};

function render(source: string): string {
  const { template, problems } = parseTemplate(source);
  expect(problems).toEqual([]);
  const rendered = renderTemplate(template, scope);
  if (!rendered.ok) throw rendered.error;
  return rendered.value;
}

function problemsOf(source: string) {
  return parseTemplate(source).problems;
}

describe("templates", () => {
  it("render ctx fields, core-provided ids and the stage's own id and name", () => {
    expect(render("Task: {{ctx.task}} in {{ctx.workflowRunId}} / {{ctx.stageExecutionId}}")).toBe(
      "Task: refactor auth module in run-1 / run-1/plan/1",
    );
    expect(render("{{stage.id}} ({{stage.name}})")).toBe("execute (Execute)");
  });

  it("render every scalar field of the stage's frontmatter", () => {
    const { template, problems } = parseTemplate(
      "{{stage.description}}: end with {{stage.completionTool}} within {{stage.turnCap}} turns ({{stage.resolutionPolicy}})",
    );
    expect(problems).toEqual([]);
    const rendered = renderTemplate(template, {
      ctx: {},
      stage: {
        id: "execute",
        name: "Execute",
        description: "Carries out the plan",
        completionTool: "submit_diff",
        turnCap: 12,
        resolutionPolicy: "fail",
      },
    });
    expect(rendered).toEqual({
      ok: true,
      value: "Carries out the plan: end with submit_diff within 12 turns (fail)",
    });
  });

  it("follow dotted paths and [n] indexes, upstream included", () => {
    expect(render("{{ctx.files[1]}} {{ctx.limits.maxLines}} {{ctx.limits.strict}}")).toBe(
      "src/token.ts 400 true",
    );
    expect(render("{{ctx.upstream[0].output.summary}}: {{ctx.upstream[0].output.steps[1]}}")).toBe(
      "Split it: b",
    );
  });

  it("render objects and lists as JSON, null as null, and the empty string as nothing", () => {
    expect(render("{{ctx.limits}}")).toBe('{\n  "maxLines": 400,\n  "strict": true\n}');
    expect(render("{{ctx.files}}")).toBe('[\n  "src/auth.ts",\n  "src/token.ts"\n]');
    expect(render("[{{ctx.nothing}}][{{ctx.empty}}]")).toBe("[null][]");
  });

  it("allow spaces inside the braces", () => {
    expect(render("{{ ctx.task }}")).toBe("refactor auth module");
  });

  it("leave text without placeholders untouched, single braces included", () => {
    const text = "function f() { return { a: 1 }; }\n}} stray";
    expect(render(text)).toBe(text);
  });

  it("write a literal {{ as \\{{", () => {
    expect(render("Use \\{{name}} in Handlebars, and {{ctx.task}}")).toBe(
      "Use {{name}} in Handlebars, and refactor auth module",
    );
  });

  it("make a missing value an explicit error, never the text undefined", () => {
    for (const [source, why] of [
      ["{{ctx.branch}}", 'ctx has no field "branch"'],
      ["{{ctx.files[5]}}", "ctx.files has no element [5]"],
      ["{{ctx.limits.maxLines.value}}", 'ctx.limits.maxLines has no field "value"'],
      ["{{ctx.upstream[1].output}}", "ctx.upstream has no element [1]"],
      ["{{ctx.nothing.x}}", 'ctx.nothing has no field "x"'],
    ] as const) {
      const rendered = renderTemplate(parseTemplate(`line one\n${source}`).template, scope);
      expect(rendered.ok).toBe(false);
      if (rendered.ok) continue;
      expect(rendered.error.code).toBe("Validation/StageCtxUnresolved");
      expect(rendered.error.message).toBe(`${source} (line 2) has no value: ${why}`);
    }
  });

  it("do not read inherited properties", () => {
    const rendered = renderTemplate(
      parseTemplate("{{ctx.task.length}} {{ctx.constructor}}").template,
      scope,
    );
    expect(rendered.ok).toBe(false);
  });

  describe("are narrow: at load time", () => {
    it.each([
      ["{{env.HOME}}", "environment variables never reach a prompt"],
      ["{{env}}", "environment variables never reach a prompt"],
      ["{{ctx.attempts.n}}", "ctx.attempts is not template-addressable"],
      ["{{ctx.attempts}}", "ctx.attempts is not template-addressable"],
      ["{{ctx.host.cwd}}", "ctx.host is a runtime surface"],
      ["{{#if ctx.task}}", "no conditionals, loops or expressions"],
      ["{{#each ctx.files}}", "no conditionals, loops or expressions"],
      ["{{ctx.a + ctx.b}}", "no conditionals, loops or expressions"],
      ["{{ctx.task | upper}}", "no conditionals, loops or expressions"],
      ["{{ctx.f()}}", "no conditionals, loops or expressions"],
      ["{{}}", "no conditionals, loops or expressions"],
      ["{{task}}", 'unknown namespace "task"'],
      ["{{ctx}}", "name a field under ctx"],
      [
        "{{stage.allowedTools}}",
        "reads only the stage's scalar fields: {{stage.id}}, {{stage.name}}, {{stage.description}}, {{stage.completionTool}}, {{stage.turnCap}}, {{stage.resolutionPolicy}}",
      ],
      ["{{stage.owner}}", "reads only the stage's scalar fields"],
      ["{{stage.turnCap.max}}", "reads only the stage's scalar fields"],
      ["{{ctx.workflowRunId.x}}", "is a string with no fields"],
      ["{{ctx.stagesBefore.x}}", "is a number with no fields"],
      ["{{ctx.upstream.output}}", "ctx.upstream is a list; index it"],
      ["{{ctx.override}}", "only {{ctx.override.reason}} and {{ctx.override.from}}"],
      ["{{ctx.override.to}}", "only {{ctx.override.reason}} and {{ctx.override.from}}"],
      ["{{ctx.override.reason.x}}", "only {{ctx.override.reason}} and {{ctx.override.from}}"],
    ])("%s is TemplateForbidden", (placeholder, why) => {
      expect(problemsOf(`Hi ${placeholder}`)).toEqual([
        {
          line: 1,
          column: 4,
          code: "Validation/TemplateForbidden",
          message: expect.stringContaining(why),
        },
      ]);
    });

    it("an unclosed {{ is TemplateSyntax", () => {
      expect(problemsOf("a\n  b {{ctx.task")).toEqual([
        {
          line: 2,
          column: 5,
          code: "Validation/TemplateSyntax",
          message: expect.stringContaining("never closed"),
        },
      ]);
      expect(problemsOf("{{ctx.a {{ctx.task}}")).toMatchObject([
        { column: 1, code: "Validation/TemplateSyntax" },
      ]);
    });

    it("positions start at the line the body starts on in its file", () => {
      expect(problemsOf("x").length).toBe(0);
      expect(parseTemplate("one\ntwo {{env.X}}", 20).problems).toMatchObject([
        { line: 21, column: 5 },
      ]);
    });
  });

  it("list the ctx fields a body reads, without core-provided ones", () => {
    const { template } = parseTemplate(
      "{{ctx.task}}\n{{ctx.files[0]}} {{ctx.limits.maxLines}} {{ctx.upstream[0].output}} {{ctx.workflowRunId}} {{ctx.stagesBefore}} {{ctx.override.reason}} {{ctx.override.from}} {{stage.id}}",
    );
    expect(template.ctxReferences).toEqual([
      { field: "task", expression: "ctx.task", line: 1, column: 1 },
      { field: "files", expression: "ctx.files[0]", line: 2, column: 1 },
      { field: "limits", expression: "ctx.limits.maxLines", line: 2, column: 18 },
    ]);
  });
});
