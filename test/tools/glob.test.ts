import { describe, expect, it } from "vitest";
import { GLOB_MAX_RESULTS, globTool } from "../../src/tools/glob.js";
import { invokeTool } from "../../src/tools/index.js";
import { codeOf, makeProject, outputOf } from "./project.js";

const FILES = {
  "src/b.ts": "",
  "src/a.ts": "",
  "src/deep/c.ts": "",
  "src/readme.md": "",
  ".github/ci.ts": "",
  "node_modules/pkg/index.ts": "",
  ".git/hooks/x.ts": "",
};

describe("Glob", () => {
  it("returns matching files as sorted paths relative to the root", async () => {
    const project = makeProject(FILES);
    const output = outputOf(await invokeTool(globTool, { pattern: "**/*.ts" }, project.context()));
    expect(output).toEqual({
      files: [".github/ci.ts", "src/a.ts", "src/b.ts", "src/deep/c.ts"],
      count: 4,
      truncated: false,
    });
  });

  it("matches from path, still answering with paths relative to the root", async () => {
    const project = makeProject(FILES);
    const args = { pattern: "*.ts", path: "src" };
    const output = outputOf(await invokeTool(globTool, args, project.context()));
    expect(output.files).toEqual(["src/a.ts", "src/b.ts"]);
  });

  it("does not follow links out of the root", async () => {
    const project = makeProject();
    const output = outputOf(await invokeTool(globTool, { pattern: "**" }, project.context()));
    expect(output.files).toEqual([]);
  });

  it(`returns at most ${GLOB_MAX_RESULTS} paths and says how many matched`, async () => {
    const many = Object.fromEntries(
      Array.from({ length: GLOB_MAX_RESULTS + 5 }, (_, i) => [
        `f/${String(i).padStart(4, "0")}.txt`,
        "",
      ]),
    );
    const project = makeProject(many);
    const output = outputOf(await invokeTool(globTool, { pattern: "f/*.txt" }, project.context()));
    const files = output.files as string[];
    expect(files).toHaveLength(GLOB_MAX_RESULTS);
    expect(files[0]).toBe("f/0000.txt");
    expect(files.at(-1)).toBe(`f/${String(GLOB_MAX_RESULTS - 1).padStart(4, "0")}.txt`);
    expect(output).toMatchObject({ count: GLOB_MAX_RESULTS + 5, truncated: true });
  });

  it.each(["../*.txt", "src/../../*", "/etc/*", "{..,src}/*"])(
    "refuses a pattern that reaches outside the root: %s",
    async (pattern) => {
      const project = makeProject(FILES);
      expect(codeOf(await invokeTool(globTool, { pattern }, project.context()))).toBe(
        "ToolTerminal/SandboxEscape",
      );
    },
  );

  it.each([
    ["src/a.ts", "ToolTerminal/NotADirectory"],
    ["nowhere", "ToolTerminal/FileNotFound"],
  ])("refuses path %s that is not a directory", async (path, code) => {
    const project = makeProject(FILES);
    const outcome = await invokeTool(globTool, { pattern: "*", path }, project.context());
    expect(codeOf(outcome)).toBe(code);
  });

  it.each([{}, { pattern: "" }, { pattern: "*", depth: 2 }])(
    "rejects invalid arguments %j",
    async (args) => {
      const project = makeProject();
      expect(codeOf(await invokeTool(globTool, args, project.context()))).toBe(
        "ToolTerminal/InvalidToolInput",
      );
    },
  );

  it("stops with Cancellation/StageCancelled when the signal aborts", async () => {
    const project = makeProject(FILES);
    const context = project.context({ signal: AbortSignal.abort() });
    expect(codeOf(await globTool.execute({ pattern: "**/*" }, context))).toBe(
      "Cancellation/StageCancelled",
    );
  });

  it("summarizes a call as its pattern", () => {
    expect(globTool.summarize({ pattern: "**/*.ts", path: "src" })).toBe("**/*.ts");
  });
});
