import { execFileSync } from "node:child_process";
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editTool } from "../../src/tools/edit.js";
import { globTool } from "../../src/tools/glob.js";
import { grepTool } from "../../src/tools/grep.js";
import { invokeTool } from "../../src/tools/index.js";
import { readTool } from "../../src/tools/read.js";
import { writeTool } from "../../src/tools/write.js";
import { codeOf, makeProject, outputOf } from "./project.js";

/** A project with `pipe` (a FIFO nobody writes to), `dev-zero` (a link to /dev/zero) and a text file. */
function projectWithSpecialFiles() {
  const project = makeProject();
  project.write({ "notes.txt": "needle here\n", "sub/more.txt": "another needle\n" });
  execFileSync("mkfifo", [join(project.root, "pipe")]);
  execFileSync("mkfifo", [join(project.root, "sub", "pipe.txt")]);
  symlinkSync("/dev/zero", join(project.root, "dev-zero"));
  return project;
}

describe("special files inside the root (FIFOs, devices)", () => {
  it.each([
    ["Read", readTool, { path: "pipe" }],
    ["Edit", editTool, { path: "pipe", old: "a", new: "b" }],
    ["Write", writeTool, { path: "pipe", content: "" }],
    ["Grep", grepTool, { pattern: "needle", path: "pipe" }],
  ])(
    "are refused by %s as ToolTerminal/NotARegularFile, without waiting for a writer",
    async (_, tool, args) => {
      const project = projectWithSpecialFiles();
      const outcome = await invokeTool(tool, args, project.context());
      expect(codeOf(outcome)).toBe("ToolTerminal/NotARegularFile");
      expect(outcome.ok ? "" : outcome.error.message).toContain("pipe is a FIFO (named pipe)");
    },
  );

  it("a link to a device is not followed out of the root", async () => {
    const project = projectWithSpecialFiles();
    const outcome = await invokeTool(readTool, { path: "dev-zero" }, project.context());
    expect(codeOf(outcome)).toBe("ToolTerminal/SandboxEscape");
  });

  it("are skipped by a Grep walk, which still searches the regular files", async () => {
    const project = projectWithSpecialFiles();
    const outcome = await invokeTool(grepTool, { pattern: "needle" }, project.context());
    expect(outputOf(outcome)).toMatchObject({
      matches: "notes.txt:1: needle here\nsub/more.txt:1: another needle",
      count: 2,
    });
  });

  it("are not listed by Glob", async () => {
    const project = projectWithSpecialFiles();
    const outcome = await invokeTool(globTool, { pattern: "**/*" }, project.context());
    const { files } = outputOf(outcome) as { files: string[] };
    expect(files).toContain("notes.txt");
    expect(files).not.toContain("pipe");
    expect(files).not.toContain("sub/pipe.txt");
    expect(files).not.toContain("dev-zero");
  });
});
