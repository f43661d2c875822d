import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadScriptFile, parseScript, type ScriptEntry } from "../../src/models/index.js";
import { tempDir, writeFiles } from "../support/stages.js";

const lines = (...text: string[]): string => `${text.join("\n")}\n`;

function entriesOf(text: string, key: string): ScriptEntry[] | undefined {
  const result = parseScript(text, "test.script.yaml");
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
  return result.value.stages.get(key);
}

function problemsOf(text: string) {
  const result = parseScript(text, "test.script.yaml");
  if (result.ok) throw new Error("expected diagnostics");
  return result.diagnostics.map(({ line, column, code, message }) => ({
    line,
    column,
    code,
    message,
  }));
}

describe("parsing a script", () => {
  it("reads every kind of entry, in order", () => {
    const text = lines(
      "stages:",
      "  plan:",
      "    - tool: Edit",
      "      args: { path: src/auth.ts, old: a, new: b }",
      "    - text: Thinking out loud",
      "    - calls:",
      "        - { tool: Grep, args: { pattern: token } }",
      "        - { tool: Read, args: { path: src/auth.ts } }",
      "    - { error: upstream 503 }",
      "    - { error: slow down, status: 429 }",
      "    - { delayMs: 1500, tool: submit_plan, args: { steps: [a, b] } }",
      "    - { text: hi, usage: { inputTokens: 10, outputTokens: 3 } }",
    );
    expect(entriesOf(text, "plan")).toEqual([
      {
        reply: {
          kind: "tool-calls",
          calls: [{ tool: "Edit", args: { path: "src/auth.ts", old: "a", new: "b" } }],
        },
        delayMs: 0,
        usage: {},
      },
      { reply: { kind: "text", text: "Thinking out loud" }, delayMs: 0, usage: {} },
      {
        reply: {
          kind: "tool-calls",
          calls: [
            { tool: "Grep", args: { pattern: "token" } },
            { tool: "Read", args: { path: "src/auth.ts" } },
          ],
        },
        delayMs: 0,
        usage: {},
      },
      { reply: { kind: "error", message: "upstream 503", status: 503 }, delayMs: 0, usage: {} },
      { reply: { kind: "error", message: "slow down", status: 429 }, delayMs: 0, usage: {} },
      {
        reply: {
          kind: "tool-calls",
          calls: [{ tool: "submit_plan", args: { steps: ["a", "b"] } }],
        },
        delayMs: 1500,
        usage: {},
      },
      {
        reply: { kind: "text", text: "hi" },
        delayMs: 0,
        usage: { inputTokens: 10, outputTokens: 3 },
      },
    ]);
  });

  it("gives a tool call without args an empty argument object", () => {
    expect(entriesOf(lines("stages:", "  plan:", "    - tool: Glob"), "plan")).toEqual([
      { reply: { kind: "tool-calls", calls: [{ tool: "Glob", args: {} }] }, delayMs: 0, usage: {} },
    ]);
  });

  it("keys stages by stage id or by pipelineId/stageId", () => {
    const text = lines(
      "stages:",
      "  review: [{ text: plain }]",
      "  code-review/review: [{ text: qualified }]",
      "  idle: []",
    );
    const result = parseScript(text, "test.script.yaml");
    expect(result.ok && [...result.value.stages.keys()]).toEqual([
      "review",
      "code-review/review",
      "idle",
    ]);
  });
});

describe("script diagnostics", () => {
  it("points at an unknown key and names the keys an entry takes", () => {
    const text = lines("stages:", "  plan:", "    - tool: Edit", "      tol: Grep");
    expect(problemsOf(text)).toEqual([
      {
        line: 4,
        column: 7,
        code: "Validation/ScriptInvalid",
        message:
          "stages.plan[0].tol: unknown key; an entry takes only tool, args, text, calls, error, status, delayMs, usage",
      },
    ]);
  });

  it("points at the second kind of an entry with two", () => {
    const text = lines("stages:", "  plan:", "    - tool: Edit", "      text: hello");
    expect(problemsOf(text)).toEqual([
      {
        line: 4,
        column: 7,
        code: "Validation/ScriptInvalid",
        message:
          "stages.plan[0].text: an entry has exactly one of tool, text, calls, error; this one also has tool",
      },
    ]);
  });

  it("points at an entry with no kind at all", () => {
    const text = lines("stages:", "  plan:", "    - text: ok", "    - delayMs: 10");
    expect(problemsOf(text)).toEqual([
      {
        line: 4,
        column: 7,
        code: "Validation/ScriptInvalid",
        message: "stages.plan[1]: an entry needs one of tool, text, calls, error",
      },
    ]);
  });

  it.each([
    ["negative", "-5", "stages.test[0].delayMs: must be 0 or more"],
    ["fractional", "1.5", "stages.test[0].delayMs: must be a whole number of milliseconds"],
    ["text", "soon", "stages.test[0].delayMs: must be a whole number of milliseconds"],
  ])("points at a %s delayMs", (_, value, message) => {
    const text = lines("stages:", "  test:", `    - { text: hi, delayMs: ${value} }`);
    expect(problemsOf(text)).toEqual([
      { line: 3, column: 19, code: "Validation/ScriptInvalid", message },
    ]);
  });

  it.each([
    [
      "a status outside 400–599",
      "{ error: boom, status: 200 }",
      "status",
      "must be an error status, 400–599",
    ],
    [
      "a status on a text entry",
      "{ text: hi, status: 500 }",
      "status",
      "only an error entry takes status",
    ],
    ["args on a text entry", "{ text: hi, args: {} }", "args", "only a tool entry takes args"],
    [
      "args that are a list",
      "{ tool: Grep, args: [auth] }",
      "args",
      "must be a mapping of argument names to values",
    ],
    ["an empty calls list", "{ calls: [] }", "calls", "must not be empty"],
    ["an empty tool name", '{ tool: "" }', "tool", "must not be empty"],
    [
      "a negative token count",
      "{ text: hi, usage: { inputTokens: -1 } }",
      "usage.inputTokens",
      "must be 0 or more",
    ],
  ])("reports %s at its key", (_, entry, key, message) => {
    const text = lines("stages:", "  plan:", `    - ${entry}`);
    const keyColumn = entry.indexOf(key.split(".").at(-1) ?? key) + 7;
    expect(problemsOf(text)).toEqual([
      {
        line: 3,
        column: keyColumn,
        code: "Validation/ScriptInvalid",
        message: `stages.plan[0].${key}: ${message}`,
      },
    ]);
  });

  it("reports an unknown key inside a call of a calls entry", () => {
    const text = lines("stages:", "  plan:", "    - calls:", "        - { tool: Grep, arg: {} }");
    expect(problemsOf(text)).toEqual([
      {
        line: 4,
        column: 25,
        code: "Validation/ScriptInvalid",
        message: "stages.plan[0].calls[0].arg: unknown key; a call takes only tool, args",
      },
    ]);
  });

  it("reports every problem in the file, in order", () => {
    const text = lines(
      "stages:",
      "  plan:",
      "    - { tool: Edit, tol: x }",
      "    - { text: hi, delayMs: -1 }",
      "  review: not a list",
      "steps: []",
    );
    expect(problemsOf(text).map(({ line, column }) => [line, column])).toEqual([
      [3, 21],
      [4, 19],
      [5, 3],
      [6, 1],
    ]);
  });

  it.each([
    ["a list", "- plan", "a script must be a mapping"],
    [
      "a mapping without stages",
      "stage: {}",
      "stages: missing: a script maps stages to lists of entries by stage id",
    ],
    [
      "stages that are a list",
      "stages: [plan]",
      "stages: must be a mapping of stage ids to lists of entries",
    ],
  ])("rejects a file that is %s", (_, text, message) => {
    expect(problemsOf(text)).toContainEqual(expect.objectContaining({ message }));
  });

  it("rejects a stage key with spaces or more than one slash", () => {
    const text = lines("stages:", "  plan stage: []", "  a/b/c: []");
    expect(problemsOf(text)).toEqual([
      expect.objectContaining({ line: 2, column: 3, code: "Validation/ScriptInvalid" }),
      expect.objectContaining({ line: 3, column: 3, code: "Validation/ScriptInvalid" }),
    ]);
  });

  it("reports broken YAML where it breaks", () => {
    const text = lines("stages:", "  plan:", "    - { tool: Edit, args: { path: a }", "  test: []");
    expect(problemsOf(text)).toEqual([
      {
        line: 4,
        column: 3,
        code: "Validation/ScriptYamlInvalid",
        message: "Flow map in block collection must be sufficiently indented and end with a }",
      },
    ]);
  });

  it("reports a duplicate key as broken YAML, at the duplicate", () => {
    const text = lines("stages:", "  plan: []", "  plan: []");
    expect(problemsOf(text)).toEqual([
      expect.objectContaining({ line: 3, column: 3, code: "Validation/ScriptYamlInvalid" }),
    ]);
  });
});

describe("script files on disk", () => {
  it("loads a script file", async () => {
    const dir = tempDir();
    writeFiles(dir, { "ok.script.yaml": lines("stages:", "  plan: [{ text: hi }]") });
    const result = await loadScriptFile(join(dir, "ok.script.yaml"));
    expect(result).toMatchObject({ ok: true, value: { file: join(dir, "ok.script.yaml") } });
  });

  it.each([
    ["missing", null, "Validation/StageFileUnreadable"],
    ["empty", "", "Validation/StageFileEmpty"],
    ["binary", new Uint8Array([0x73, 0x00, 0x01]), "Validation/StageFileBinary"],
  ])("reports a %s file without throwing", async (_, content, code) => {
    const dir = tempDir();
    if (content !== null) writeFiles(dir, { "s.script.yaml": content });
    const result = await loadScriptFile(join(dir, "s.script.yaml"));
    expect(result).toEqual({
      ok: false,
      diagnostics: [expect.objectContaining({ line: 1, column: 1, code, severity: "error" })],
    });
  });

  it("refuses a FIFO without waiting for a writer", async () => {
    const dir = tempDir();
    execFileSync("mkfifo", [join(dir, "s.script.yaml")]);
    const result = await loadScriptFile(join(dir, "s.script.yaml"));
    expect(result).toEqual({
      ok: false,
      diagnostics: [
        expect.objectContaining({
          code: "Validation/StageFileUnreadable",
          message: "is a FIFO (named pipe), not a regular file",
        }),
      ],
    });
  });

  it("names the file in every diagnostic", async () => {
    const dir = tempDir();
    const file = join(dir, "bad.script.yaml");
    writeFiles(dir, { "bad.script.yaml": lines("stages:", "  plan: [{ tol: x }]") });
    const result = await loadScriptFile(file);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.diagnostics.every((d) => d.file === file)).toBe(true);
  });
});
