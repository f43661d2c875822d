import { chmodSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { invokeTool } from "../../src/tools/index.js";
import { writeTool } from "../../src/tools/write.js";
import { codeOf, makeProject, outputOf } from "./project.js";

const filesIn = (dir: string) => readdirSync(dir, { recursive: true }).map(String).sort();

describe("Write", () => {
  it("creates a file, and the directories it needs, inside the root", async () => {
    const project = makeProject();
    const args = { path: "src/new/file.ts", content: "export {};\n" };
    const output = outputOf(await invokeTool(writeTool, args, project.context()));
    expect(output).toEqual({ path: "src/new/file.ts", bytes: 11, created: true, unchanged: false });
    expect(project.read("src/new/file.ts")).toBe("export {};\n");
  });

  it("overwrites an existing file atomically, leaving no temporary file", async () => {
    const project = makeProject({ "src/a.ts": "old\n" });
    const inode = statSync(join(project.root, "src/a.ts")).ino;
    const output = outputOf(
      await invokeTool(writeTool, { path: "src/a.ts", content: "new\n" }, project.context()),
    );
    expect(output).toMatchObject({ created: false, unchanged: false });
    expect(project.read("src/a.ts")).toBe("new\n");
    // A new inode: the content arrived by rename, not by rewriting the old file in place.
    expect(statSync(join(project.root, "src/a.ts")).ino).not.toBe(inode);
    expect(filesIn(join(project.root, "src"))).toEqual(["a.ts"]);
  });

  it("keeps an existing file's permissions", async () => {
    const project = makeProject({ "run.sh": "echo one\n" });
    chmodSync(join(project.root, "run.sh"), 0o750);
    await invokeTool(writeTool, { path: "run.sh", content: "echo two\n" }, project.context());
    expect(statSync(join(project.root, "run.sh")).mode & 0o777).toBe(0o750);
  });

  it("writing the same content again succeeds with unchanged and does not touch the file", async () => {
    const project = makeProject();
    const args = { path: "notes.md", content: "# Notes\n" };
    await invokeTool(writeTool, args, project.context());
    const inode = statSync(join(project.root, "notes.md")).ino;
    const output = outputOf(await invokeTool(writeTool, args, project.context()));
    expect(output).toEqual({ path: "notes.md", bytes: 8, created: false, unchanged: true });
    expect(statSync(join(project.root, "notes.md")).ino).toBe(inode);
  });

  it("writes an empty file", async () => {
    const project = makeProject();
    outputOf(await invokeTool(writeTool, { path: "empty", content: "" }, project.context()));
    expect(project.read("empty")).toBe("");
  });

  it.each([
    ["a directory", "src", "ToolTerminal/IsDirectory"],
    ["below a file", "file.txt/child.txt", "ToolTerminal/NotADirectory"],
  ])("refuses to write over %s", async (_what, path, code) => {
    const project = makeProject({ "file.txt": "keep\n" });
    mkdirSync(join(project.root, "src"));
    expect(codeOf(await invokeTool(writeTool, { path, content: "x" }, project.context()))).toBe(
      code,
    );
    expect(project.read("file.txt")).toBe("keep\n");
  });

  it.each([
    { path: "a.txt" },
    { content: "x" },
    { path: "", content: "x" },
    { path: "a", content: 1 },
  ])("rejects invalid arguments %j", async (args) => {
    const project = makeProject();
    expect(codeOf(await invokeTool(writeTool, args, project.context()))).toBe(
      "ToolTerminal/InvalidToolInput",
    );
  });

  it("summarizes a call as its path", () => {
    expect(writeTool.summarize({ path: "src/a.ts", content: "" })).toBe("src/a.ts");
  });
});
