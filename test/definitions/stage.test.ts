import { describe, expect, it, vi } from "vitest";
import {
  type Diagnostic,
  type LoadResult,
  parseStageDefinition,
  REQUIRED_STAGE_FIELDS,
  type StageDefinition,
} from "../../src/definitions/index.js";
import { stageFrontmatterSchema } from "../../src/definitions/stage-schema.js";
import { lineOf, seedPlan, withLine, withoutField } from "../support/stages.js";
import { searchedElements } from "../support/work.js";

const FILE = "stages/plan.md";

function problems(result: LoadResult<StageDefinition>): Diagnostic[] {
  if (result.ok) throw new Error("expected the stage to be rejected");
  return result.diagnostics;
}

function loaded(result: LoadResult<StageDefinition>): StageDefinition {
  if (!result.ok)
    throw new Error(`expected a definition, got ${JSON.stringify(result.diagnostics)}`);
  return result.value;
}

describe("a stage file", () => {
  it("has its frontmatter's fields parsed once: the check's result is the definition's", () => {
    const parses = [
      vi.spyOn(stageFrontmatterSchema, "safeParse"),
      vi.spyOn(stageFrontmatterSchema, "parse"),
    ];
    try {
      loaded(parseStageDefinition(seedPlan, FILE));
      expect(parses.reduce((calls, spy) => calls + spy.mock.calls.length, 0)).toBe(1);
    } finally {
      for (const spy of parses) spy.mockRestore();
    }
  });

  it("loads the seed's plan stage into a typed definition", () => {
    const plan = loaded(parseStageDefinition(seedPlan, FILE));
    expect(plan).toMatchObject({
      id: "plan",
      name: "Plan",
      allowedTools: ["Read", "Grep", "Glob"],
      completionTool: "submit_plan",
      retryPolicy: { maxAttempts: 2, backoff: "none", delayMs: 1000 },
      turnCap: 20,
      resolutionPolicy: "retry-later",
      tags: [],
      extensions: {},
      file: FILE,
    });
    expect(plan.completionSchema).toEqual({
      type: "object",
      required: ["summary", "steps"],
      properties: {
        summary: { type: "string" },
        steps: { type: "array", items: { type: "string" } },
      },
    });
    expect(plan.body).toContain("You are planning a change");
    expect(plan.template.ctxReferences).toEqual([
      { field: "task", expression: "ctx.task", line: lineOf(seedPlan, "Task"), column: 7 },
    ]);
  });

  it.each(REQUIRED_STAGE_FIELDS)(
    "without %s, names the field and where the frontmatter starts",
    (field) => {
      const [only, ...rest] = problems(parseStageDefinition(withoutField(seedPlan, field), FILE));
      expect(rest).toEqual([]);
      expect(only).toEqual({
        file: FILE,
        line: 1,
        column: 1,
        code: "Validation/StageMissingField",
        severity: "error",
        message: `missing required field "${field}"`,
      });
    },
  );

  it("reports every problem at once, not just the first", () => {
    let text = withoutField(withoutField(seedPlan, "name"), "turnCap");
    text = withLine(text, "id", "id: Plan Stage");
    const codes = problems(parseStageDefinition(text, FILE)).map((d) => d.code);
    expect(codes).toEqual([
      "Validation/StageMissingField",
      "Validation/StageMissingField",
      "Validation/StageIdInvalid",
    ]);
  });

  it("keeps optional fields and unknown keys, and ignores the unknown ones", () => {
    const text = seedPlan.replace(
      "turnCap: 20",
      "turnCap: 20\ndescription: Plans a change\ntags: [read-only]\nowner: platform-team\nx-review: { required: true }",
    );
    const plan = loaded(parseStageDefinition(text, FILE));
    expect(plan.description).toBe("Plans a change");
    expect(plan.tags).toEqual(["read-only"]);
    expect(plan.extensions).toEqual({ owner: "platform-team", "x-review": { required: true } });
  });

  it("lets its body read its scalar fields, and refuses {{stage.description}} when it has none", () => {
    const body = (text: string) =>
      `${text}\nTurns: {{stage.turnCap}}, ends with {{stage.completionTool}}. {{stage.description}}\n`;
    const described = body(
      seedPlan.replace("turnCap: 20", "turnCap: 20\ndescription: Plans a change"),
    );
    expect(parseStageDefinition(described, FILE)).toMatchObject({ ok: true, warnings: [] });
    const bare = body(seedPlan);
    expect(problems(parseStageDefinition(bare, FILE))).toEqual([
      expect.objectContaining({
        line: bare.split("\n").length - 1,
        column: (bare.split("\n").at(-2) as string).indexOf("{{stage.description}}") + 1,
        code: "Validation/TemplateForbidden",
        message:
          "{{stage.description}}: the stage has no description to fill it with; add one to the frontmatter",
      }),
    ]);
    expect(
      problems(parseStageDefinition(`${seedPlan}\n{{stage.tags}}\n`, FILE)).map((d) => d.code),
    ).toEqual(["Validation/TemplateForbidden"]);
  });

  describe("unknown frontmatter keys", () => {
    const warningsOf = (...lines: string[]) => {
      const text = seedPlan.replace("turnCap: 20", ["turnCap: 20", ...lines].join("\n"));
      const result = parseStageDefinition(text, FILE);
      if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
      return result.warnings.map(({ line, column, code, severity, message }) => ({
        at: `${line}:${column}`,
        code,
        severity,
        message,
      }));
    };
    const turnCapLine = lineOf(seedPlan, "turnCap");

    it("stay silent when they look like the author's own metadata", () => {
      expect(warningsOf("owner: alice", "x-review: { required: true }", "ticket: ABC-12")).toEqual(
        [],
      );
    });

    it("warn of a key close to a field, naming the field, and are still ignored", () => {
      expect(warningsOf("turncap: 5", "turnCaps: 5", "completiontool: done", "tag: [x]")).toEqual(
        ["turnCap", "turnCap", "completionTool", "tags"].map((field, i) => ({
          at: `${turnCapLine + 1 + i}:1`,
          code: "Validation/StageFieldUnknown",
          severity: "warning",
          message: `unknown key "${["turncap", "turnCaps", "completiontool", "tag"][i]}" is ignored; did you mean "${field}"?`,
        })),
      );
      const text = seedPlan.replace("turnCap: 20", "turnCap: 20\nturncap: 5");
      expect(loaded(parseStageDefinition(text, FILE))).toMatchObject({
        turnCap: 20,
        extensions: { turncap: 5 },
      });
    });

    it("warn of a limit stagechart does not have, saying what bounds a stage instead", () => {
      const messages = warningsOf(
        "timeoutMs: 10",
        "max_tokens: 5",
        "budget: 3",
        "temperature: 0.2",
        "maxTurns: 4",
        "retries: 2",
        "tools: [Read]",
      ).map((w) => w.message);
      expect(messages).toEqual([
        'unknown key "timeoutMs" is ignored: a stage file sets no time limit: the pipeline\'s budget block does (budget.stages.<stage id>.maxSeconds), and the host option modelCallTimeoutMs bounds each model call',
        'unknown key "max_tokens" is ignored: a stage file sets no token, cost or time budget: the pipeline does, in its budget block (budget.stages.<stage id>: maxInputTokens, maxOutputTokens, maxCostUsd, maxSeconds)',
        'unknown key "budget" is ignored: a stage file sets no token, cost or time budget: the pipeline does, in its budget block (budget.stages.<stage id>: maxInputTokens, maxOutputTokens, maxCostUsd, maxSeconds)',
        'unknown key "temperature" is ignored: a stage does not choose its model or its sampling: the run\'s model is picked with --model',
        'unknown key "maxTurns" is ignored: use turnCap, the model turns an attempt may take',
        'unknown key "retries" is ignored: use retryPolicy: { maxAttempts, backoff }',
        'unknown key "tools" is ignored: use allowedTools, the tools the stage may call',
      ]);
    });
  });

  it("accepts an empty allowedTools list", () => {
    const text = withLine(seedPlan, "allowedTools", "allowedTools: []");
    expect(loaded(parseStageDefinition(text, FILE)).allowedTools).toEqual([]);
  });

  describe("values", () => {
    const rejects = (text: string) => problems(parseStageDefinition(text, FILE));

    it("a non-kebab id is StageIdInvalid on the id line", () => {
      for (const id of ["Plan", "plan_stage", "plan--x", "-plan", "plan stage", "plän"]) {
        expect(rejects(withLine(seedPlan, "id", `id: "${id}"`))).toMatchObject([
          { code: "Validation/StageIdInvalid", line: lineOf(seedPlan, "id"), column: 1 },
        ]);
      }
    });

    it("accepts kebab-case ids with digits", () => {
      for (const id of ["plan", "plan-2", "code-review-v2", "a1"]) {
        expect(loaded(parseStageDefinition(withLine(seedPlan, "id", `id: ${id}`), FILE)).id).toBe(
          id,
        );
      }
    });

    it("turnCap below 1 is StageTurnCapTooLow; a non-integer is StageDefinitionInvalid", () => {
      const line = lineOf(seedPlan, "turnCap");
      expect(rejects(withLine(seedPlan, "turnCap", "turnCap: 0"))).toMatchObject([
        { code: "Validation/StageTurnCapTooLow", line },
      ]);
      expect(rejects(withLine(seedPlan, "turnCap", "turnCap: -3"))).toMatchObject([
        { code: "Validation/StageTurnCapTooLow", line },
      ]);
      expect(rejects(withLine(seedPlan, "turnCap", "turnCap: 2.5"))).toMatchObject([
        { code: "Validation/StageDefinitionInvalid", line },
      ]);
      expect(rejects(withLine(seedPlan, "turnCap", "turnCap: twenty"))).toMatchObject([
        { code: "Validation/StageDefinitionInvalid", line },
      ]);
    });

    it("resolutionPolicy is one of retry-later, skip, fail", () => {
      for (const policy of ["retry-later", "skip", "fail"]) {
        const text = withLine(seedPlan, "resolutionPolicy", `resolutionPolicy: ${policy}`);
        expect(loaded(parseStageDefinition(text, FILE)).resolutionPolicy).toBe(policy);
      }
      const [problem] = rejects(withLine(seedPlan, "resolutionPolicy", "resolutionPolicy: later"));
      expect(problem).toMatchObject({
        code: "Validation/StageDefinitionInvalid",
        line: lineOf(seedPlan, "resolutionPolicy"),
        message: "resolutionPolicy must be one of retry-later, skip, fail",
      });
    });

    it("retryPolicy takes a backoff kind with optional delays", () => {
      const policy = (block: string) =>
        seedPlan.replace(/retryPolicy:\n(?: {2}.*\n)+/, `retryPolicy:\n${block}`);
      const exponential = policy(
        "  maxAttempts: 4\n  backoff: exponential\n  delayMs: 250\n  maxDelayMs: 4000\n",
      );
      expect(loaded(parseStageDefinition(exponential, FILE)).retryPolicy).toEqual({
        maxAttempts: 4,
        backoff: "exponential",
        delayMs: 250,
        maxDelayMs: 4000,
      });
      const fixed = policy("  maxAttempts: 3\n  backoff: fixed\n");
      expect(loaded(parseStageDefinition(fixed, FILE)).retryPolicy).toEqual({
        maxAttempts: 3,
        backoff: "fixed",
        delayMs: 1000,
      });

      const attemptsLine = lineOf(seedPlan, "retryPolicy") + 1;
      expect(rejects(policy("  maxAttempts: 0\n  backoff: none\n"))).toMatchObject([
        { code: "Validation/StageDefinitionInvalid", line: attemptsLine, column: 3 },
      ]);
      expect(rejects(policy("  maxAttempts: 2\n  backoff: linear\n"))).toMatchObject([
        { line: attemptsLine + 1, message: "backoff must be one of none, fixed, exponential" },
      ]);
      expect(rejects(policy("  maxAttempts: 2\n  backoff: fixed\n  delayMs: -1\n"))).toMatchObject([
        { line: attemptsLine + 2, message: "delayMs must be 0 or more" },
      ]);
      expect(
        rejects(
          policy("  maxAttempts: 2\n  backoff: exponential\n  delayMs: 500\n  maxDelayMs: 100\n"),
        ),
      ).toMatchObject([
        { line: attemptsLine + 3, message: "maxDelayMs must not be less than delayMs" },
      ]);
      expect(rejects(policy("  maxAttempts: 2\n  backoff: none\n  delay: 5\n"))).toMatchObject([
        { line: lineOf(seedPlan, "retryPolicy"), message: 'retryPolicy: unknown key "delay"' },
      ]);
      expect(rejects(policy("  maxAttempts: 2\n"))).toMatchObject([
        {
          code: "Validation/StageMissingField",
          line: lineOf(seedPlan, "retryPolicy"),
          message: 'missing required field "retryPolicy.backoff"',
        },
      ]);
    });

    it("tool names must be names a provider accepts", () => {
      const [problem] = rejects(
        withLine(seedPlan, "allowedTools", 'allowedTools: ["Read", "rm -rf"]'),
      );
      expect(problem).toMatchObject({
        code: "Validation/StageDefinitionInvalid",
        line: lineOf(seedPlan, "allowedTools"),
      });
      expect(
        rejects(withLine(seedPlan, "completionTool", "completionTool: submit plan")),
      ).toMatchObject([
        { code: "Validation/StageDefinitionInvalid", line: lineOf(seedPlan, "completionTool") },
      ]);
    });

    it("the completion tool may not also be an allowed tool", () => {
      const text = withLine(seedPlan, "allowedTools", 'allowedTools: ["Read", "submit_plan"]');
      expect(rejects(text)).toMatchObject([
        { code: "Validation/CompletionToolCollision", line: lineOf(seedPlan, "completionTool") },
      ]);
    });

    it("a tool listed twice in allowedTools is a mistake", () => {
      const text = withLine(seedPlan, "allowedTools", 'allowedTools: ["Read", "Grep", "Read"]');
      expect(rejects(text)).toMatchObject([{ message: 'allowedTools lists "Read" twice' }]);
    });

    it("a long allowedTools list is checked for repeats with work linear in its length", async () => {
      const tools = Array.from({ length: 2000 }, (_, i) => `"Tool${i}"`).join(", ");
      const text = withLine(seedPlan, "allowedTools", `allowedTools: [${tools}, "Tool7"]`);
      const searched = await searchedElements(() => {
        expect(rejects(text)).toMatchObject([{ message: 'allowedTools lists "Tool7" twice' }]);
      });
      expect(searched).toBeLessThan(50 * 2000);
    });
  });

  describe("schemas", () => {
    const withSchema = (schema: string) =>
      seedPlan.replace(/completionSchema:\n(?: {2}.*\n)+/, `completionSchema:\n${schema}`);

    it("an invalid completionSchema is StageCompletionSchemaInvalid pointing into the schema", () => {
      const text = withSchema("  type: object\n  properties:\n    summary: { type: strin }\n");
      const [problem, ...rest] = problems(parseStageDefinition(text, FILE));
      expect(rest).toEqual([]);
      expect(problem).toMatchObject({
        code: "Validation/StageCompletionSchemaInvalid",
        line: lineOf(seedPlan, "completionSchema") + 3,
        column: 16,
      });
      expect(problem?.message).toContain("completionSchema.properties.summary.type");
    });

    it("is compiled in Ajv strict mode: unknown keywords and undeclared required fields are errors", () => {
      const unknownKeyword = withSchema(
        "  type: object\n  properties: { a: { type: string } }\n  requird: [a]\n",
      );
      expect(problems(parseStageDefinition(unknownKeyword, FILE))[0]?.message).toContain(
        'unknown keyword: "requird"',
      );
      const undeclared = withSchema(
        "  type: object\n  required: [b]\n  properties: { a: { type: string } }\n",
      );
      expect(problems(parseStageDefinition(undeclared, FILE))[0]?.message).toContain(
        'required property "b"',
      );
    });

    it("the completion schema describes an object, since it is a tool's input", () => {
      const text = withSchema("  type: array\n  items: { type: string }\n");
      expect(problems(parseStageDefinition(text, FILE))).toMatchObject([
        {
          code: "Validation/StageCompletionSchemaInvalid",
          line: lineOf(seedPlan, "completionSchema"),
        },
      ]);
    });

    it("a completionSchema that is not a mapping is rejected", () => {
      const text = withSchema("  - type\n  - object\n");
      expect(problems(parseStageDefinition(text, FILE))[0]?.code).toBe(
        "Validation/StageDefinitionInvalid",
      );
    });

    it("an invalid inputsSchema has its own code", () => {
      const text = seedPlan.replace("turnCap: 20", "turnCap: 20\ninputsSchema:\n  type: objec\n");
      expect(problems(parseStageDefinition(text, FILE))).toMatchObject([
        { code: "Validation/StageInputsSchemaInvalid", line: lineOf(seedPlan, "turnCap") + 2 },
      ]);
    });

    it("supports standard formats", () => {
      const text = withSchema(
        "  type: object\n  properties: { url: { type: string, format: uri } }\n",
      );
      expect(parseStageDefinition(text, FILE).ok).toBe(true);
    });
  });

  describe("the file's shape", () => {
    it("without frontmatter is StageFrontmatterMissing", () => {
      expect(problems(parseStageDefinition("# Plan\n\nJust a prompt.\n", FILE))).toEqual([
        expect.objectContaining({ code: "Validation/StageFrontmatterMissing", line: 1, column: 1 }),
      ]);
    });

    it("with broken YAML is StageYamlInvalid at the broken spot", () => {
      const text = seedPlan.replace("turnCap: 20", "turnCap: [20");
      const [problem] = problems(parseStageDefinition(text, FILE));
      expect(problem).toMatchObject({ code: "Validation/StageYamlInvalid" });
      expect(problem?.line).toBeGreaterThanOrEqual(lineOf(seedPlan, "turnCap"));
    });

    it("with a duplicated key is StageYamlInvalid", () => {
      const text = seedPlan.replace("turnCap: 20", "turnCap: 20\nturnCap: 30");
      expect(problems(parseStageDefinition(text, FILE))).toMatchObject([
        { code: "Validation/StageYamlInvalid", line: lineOf(seedPlan, "turnCap") + 1 },
      ]);
    });

    it("with an alias inside the node it names is StageYamlInvalid, not an endless schema check", () => {
      const text = seedPlan
        .replace("completionSchema:", "completionSchema: &schema")
        .replace("summary: { type: string }", "summary: *schema");
      expect(problems(parseStageDefinition(text, FILE))).toMatchObject([
        { code: "Validation/StageYamlInvalid", line: lineOf(seedPlan, "completionSchema") + 4 },
      ]);
    });

    it("with an alias to no anchor is StageYamlInvalid at the alias, never a throw", () => {
      const text = seedPlan.replace(/^allowedTools: .*$/m, "allowedTools: [*Glob]");
      expect(problems(parseStageDefinition(text, FILE))).toMatchObject([
        { code: "Validation/StageYamlInvalid", line: lineOf(seedPlan, "allowedTools") },
      ]);
    });

    it("with empty frontmatter lists every required field", () => {
      const found = problems(parseStageDefinition("---\n---\nHello\n", FILE));
      expect(found.map((d) => d.message)).toEqual(
        REQUIRED_STAGE_FIELDS.map((f) => `missing required field "${f}"`),
      );
    });

    it("with a list for frontmatter is StageDefinitionInvalid", () => {
      expect(problems(parseStageDefinition("---\n- a\n- b\n---\nHello\n", FILE))).toMatchObject([
        {
          code: "Validation/StageDefinitionInvalid",
          message: "the frontmatter is a list; it must map field names to values",
        },
      ]);
    });

    it("handles Windows line endings and a byte-order mark", () => {
      const windows = `\uFEFF${seedPlan.replaceAll("\n", "\r\n")}`;
      expect(loaded(parseStageDefinition(windows, FILE)).id).toBe("plan");
      const broken = windows.replace("turnCap: 20", "turnCap: 0");
      expect(problems(parseStageDefinition(broken, FILE))).toMatchObject([
        { line: lineOf(seedPlan, "turnCap") },
      ]);
    });

    it("warns about an empty body but still loads", () => {
      const text = `${seedPlan.slice(0, seedPlan.lastIndexOf("---") + 3)}\n\n`;
      const result = parseStageDefinition(text, FILE);
      if (!result.ok) throw new Error("expected a definition");
      expect(result.warnings).toMatchObject([
        { code: "Validation/StageBodyEmpty", severity: "warning" },
      ]);
    });
  });

  describe("the body", () => {
    it("is parsed at load time: forbidden placeholders are diagnostics at their line and column", () => {
      const text = seedPlan.replace("Task: {{ctx.task}}", "Task: {{ctx.task}} for {{env.HOME}}");
      expect(problems(parseStageDefinition(text, FILE))).toEqual([
        {
          file: FILE,
          line: lineOf(seedPlan, "Task"),
          column: 24,
          code: "Validation/TemplateForbidden",
          severity: "error",
          message: expect.stringContaining("{{env.HOME}}"),
        },
      ]);
    });

    it("reports template problems together with frontmatter problems", () => {
      const text = withLine(seedPlan, "turnCap", "turnCap: 0").replace(
        "{{ctx.task}}",
        "{{ctx.host.cwd}}",
      );
      expect(problems(parseStageDefinition(text, FILE)).map((d) => d.code)).toEqual([
        "Validation/StageTurnCapTooLow",
        "Validation/TemplateForbidden",
      ]);
    });
  });
});
