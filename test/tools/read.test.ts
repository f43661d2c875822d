import { mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MAX_TEXT_FILE_BYTES } from "../../src/tools/files.js";
import { invokeTool } from "../../src/tools/index.js";
import { readTool } from "../../src/tools/read.js";
import { codeOf, makeProject, outputOf } from "./project.js";

const FILE = "one\ntwo\nthree\nfour\n";

describe("Read", () => {
  it("returns the file numbered like cat -n, with the total line count", async () => {
    const project = makeProject({ "notes.txt": FILE });
    const output = outputOf(await invokeTool(readTool, { path: "notes.txt" }, project.context()));
    expect(output).toEqual({
      path: "notes.txt",
      content: "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour",
      fromLine: 1,
      toLine: 4,
      totalLines: 4,
    });
  });

  it("shows a window of lines with offset (1-based) and limit", async () => {
    const project = makeProject({ "notes.txt": FILE });
    const args = { path: "notes.txt", offset: 2, limit: 2 };
    const output = outputOf(await invokeTool(readTool, args, project.context()));
    expect(output.content).toBe("     2\ttwo\n     3\tthree");
    expect(output).toMatchObject({ fromLine: 2, toLine: 3, totalLines: 4 });
  });

  it("refuses an offset past the end", async () => {
    const project = makeProject({ "notes.txt": FILE });
    const outcome = await invokeTool(readTool, { path: "notes.txt", offset: 9 }, project.context());
    expect(codeOf(outcome)).toBe("ToolTerminal/InvalidToolInput");
  });

  it("reads an empty file as no lines", async () => {
    const project = makeProject({ "empty.txt": "" });
    const output = outputOf(await invokeTool(readTool, { path: "empty.txt" }, project.context()));
    expect(output).toMatchObject({ content: "", totalLines: 0 });
  });

  it("follows a link that stays inside the root", async () => {
    const project = makeProject({ "notes.txt": FILE });
    symlinkSync("notes.txt", join(project.root, "alias.txt"));
    const output = outputOf(await invokeTool(readTool, { path: "alias.txt" }, project.context()));
    expect(output.totalLines).toBe(4);
  });

  it.each([
    ["a missing file", "missing.txt", "ToolTerminal/FileNotFound"],
    ["a directory", "src", "ToolTerminal/IsDirectory"],
    ["a file with NUL bytes", "image.png", "ToolTerminal/BinaryFile"],
    ["a file that is not UTF-8", "latin1.txt", "ToolTerminal/BinaryFile"],
  ])("refuses %s with a clear error", async (_what, path, code) => {
    const project = makeProject({
      "image.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]),
      "latin1.txt": Buffer.from([0x63, 0x61, 0x66, 0xe9]),
    });
    mkdirSync(join(project.root, "src"));
    const outcome = await invokeTool(readTool, { path }, project.context());
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe(code);
    expect(outcome.error.message).toContain(path);
  });

  it("refuses a file too large to load", async () => {
    const project = makeProject({ "big.log": Buffer.alloc(MAX_TEXT_FILE_BYTES + 1, 0x61) });
    expect(codeOf(await invokeTool(readTool, { path: "big.log" }, project.context()))).toBe(
      "ToolTerminal/FileTooLarge",
    );
  });

  it.each([
    [{}, "'path'"],
    [{ path: "a", offset: 0 }, "/offset"],
    [{ path: "a", limit: 1.5 }, "/limit"],
    [{ path: "a", file_path: "a" }, "additional"],
  ])("rejects invalid arguments %j", async (args, mentioned) => {
    const outcome = await invokeTool(readTool, args, makeProject().context());
    expect(codeOf(outcome)).toBe("ToolTerminal/InvalidToolInput");
    if (!outcome.ok) expect(outcome.error.message).toContain(mentioned);
  });

  it("summarizes a call as its path", () => {
    expect(readTool.summarize({ path: "src/a.ts" })).toBe("src/a.ts");
  });
});
