import { describe, expect, it } from "vitest";
import { grepTool } from "../../src/tools/grep.js";
import { invokeTool } from "../../src/tools/index.js";
import { codeOf, makeProject, outputOf } from "./project.js";

const FILES = {
  "src/app.ts": "import { x } from './x';\nconst TODO = 1;\n// todo: later\n",
  "src/deep/util.ts": "export const todo = 'TODO';\n",
  "docs/notes.md": "TODO write docs\n",
  "node_modules/pkg/index.ts": "TODO in a dependency\n",
  ".git/HEAD": "TODO in git\n",
  "logo.png": Buffer.from("TODO\0binary"),
};

const grep = async (
  args: Record<string, unknown>,
  files: Record<string, string | Buffer> = FILES,
) => {
  const project = makeProject(files);
  return invokeTool(grepTool, args, project.context());
};

describe("Grep", () => {
  it("lists matching lines as path:line: text, with a count, skipping .git, node_modules and binary files", async () => {
    const output = outputOf(await grep({ pattern: "TODO" }));
    expect(output).toEqual({
      matches: [
        "docs/notes.md:1: TODO write docs",
        "src/app.ts:2: const TODO = 1;",
        "src/deep/util.ts:1: export const todo = 'TODO';",
      ].join("\n"),
      count: 3,
      truncated: false,
    });
  });

  it("does not look through links that point outside the root", async () => {
    const output = outputOf(await grep({ pattern: "secret" }, {}));
    expect(output).toMatchObject({ matches: "", count: 0 });
  });

  it("matches case-insensitively with ignoreCase", async () => {
    const output = outputOf(await grep({ pattern: "todo", path: "src", ignoreCase: true }));
    expect(output.count).toBe(3);
    expect(output.matches).toContain("src/app.ts:3: // todo: later");
  });

  it("takes a JavaScript regular expression", async () => {
    const output = outputOf(await grep({ pattern: "^(import|export)\\b" }));
    expect(output.matches).toBe(
      "src/app.ts:1: import { x } from './x';\nsrc/deep/util.ts:1: export const todo = 'TODO';",
    );
  });

  it("filters files with glob: a bare name pattern matches at any depth", async () => {
    const output = outputOf(await grep({ pattern: "TODO", glob: "*.md" }));
    expect(output.matches).toBe("docs/notes.md:1: TODO write docs");
  });

  it("filters files with glob: a pattern with a slash is matched from path", async () => {
    const output = outputOf(await grep({ pattern: "TODO", path: "src", glob: "deep/**/*.ts" }));
    expect(output.matches).toBe("src/deep/util.ts:1: export const todo = 'TODO';");
  });

  it("searches a single file when path names one", async () => {
    const output = outputOf(await grep({ pattern: "o", path: "docs/notes.md" }));
    expect(output).toMatchObject({ matches: "docs/notes.md:1: TODO write docs", count: 1 });
  });

  it("stops at maxResults and says the list is truncated", async () => {
    const output = outputOf(await grep({ pattern: "TODO", maxResults: 2 }));
    expect(output).toMatchObject({ count: 2, truncated: true });
    expect((output.matches as string).split("\n")).toHaveLength(2);
  });

  it("is not truncated when the matches are exactly maxResults", async () => {
    const output = outputOf(await grep({ pattern: "TODO", maxResults: 3 }));
    expect(output).toMatchObject({ count: 3, truncated: false });
  });

  it("rejects an invalid regular expression with a clear message", async () => {
    const outcome = await grep({ pattern: "(unclosed" });
    expect(codeOf(outcome)).toBe("ToolTerminal/InvalidToolInput");
    if (!outcome.ok)
      expect(outcome.error.message).toMatch(/not a valid JavaScript regular expression/);
  });

  it("reports a missing path", async () => {
    expect(codeOf(await grep({ pattern: "x", path: "nowhere" }))).toBe("ToolTerminal/FileNotFound");
  });

  it.each(["../**/*.txt", "/etc/*"])("refuses a glob that reaches outside: %s", async (glob) => {
    expect(codeOf(await grep({ pattern: "secret", glob }))).toBe("ToolTerminal/SandboxEscape");
  });

  it.each([
    {},
    { pattern: "" },
    { pattern: "x", maxResults: 0 },
    { pattern: "x", ignoreCase: "yes" },
  ])("rejects invalid arguments %j", async (args) => {
    expect(codeOf(await grep(args))).toBe("ToolTerminal/InvalidToolInput");
  });

  it("stops with Cancellation/StageCancelled when the signal aborts", async () => {
    const project = makeProject(FILES);
    const outcome = await grepTool.execute(
      { pattern: "TODO" },
      project.context({ signal: AbortSignal.abort() }),
    );
    expect(codeOf(outcome)).toBe("Cancellation/StageCancelled");
  });

  it("summarizes a call as its pattern", () => {
    expect(grepTool.summarize({ pattern: "TODO", path: "src" })).toBe("TODO");
  });
});
