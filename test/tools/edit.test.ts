import { chmodSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editTool } from "../../src/tools/edit.js";
import { invokeTool } from "../../src/tools/index.js";
import { codeOf, makeProject, outputOf } from "./project.js";

const SOURCE = "import a from 'a';\n\nexport const value = 1;\n";

describe("Edit", () => {
  it("replaces the one occurrence of old with new", async () => {
    const project = makeProject({ "src/x.ts": SOURCE });
    const args = { path: "src/x.ts", old: "value = 1", new: "value = 2" };
    const output = outputOf(await invokeTool(editTool, args, project.context()));
    expect(output).toEqual({ path: "src/x.ts", replacements: 1, alreadyApplied: false });
    expect(project.read("src/x.ts")).toBe("import a from 'a';\n\nexport const value = 2;\n");
  });

  it("inserts new literally: $-patterns mean nothing", async () => {
    const project = makeProject({ "x.txt": "price\n" });
    await invokeTool(editTool, { path: "x.txt", old: "price", new: "$& $1 $$" }, project.context());
    expect(project.read("x.txt")).toBe("$& $1 $$\n");
  });

  it("repeating the same edit succeeds with alreadyApplied and leaves the file unchanged", async () => {
    const project = makeProject({ "src/x.ts": SOURCE });
    const args = { path: "src/x.ts", old: "value = 1", new: "value = 2" };
    await invokeTool(editTool, args, project.context());
    const after = project.read("src/x.ts");
    const mtime = statSync(join(project.root, "src/x.ts")).mtimeMs;
    const output = outputOf(await invokeTool(editTool, args, project.context()));
    expect(output).toEqual({ path: "src/x.ts", replacements: 0, alreadyApplied: true });
    expect(project.read("src/x.ts")).toBe(after);
    expect(statSync(join(project.root, "src/x.ts")).mtimeMs).toBe(mtime);
  });

  it("is idempotent when new contains old (appending after a line)", async () => {
    const project = makeProject({ "src/x.ts": SOURCE });
    const args = {
      path: "src/x.ts",
      old: "import a from 'a';\n",
      new: "import a from 'a';\nimport b from 'b';\n",
    };
    await invokeTool(editTool, args, project.context());
    const once = project.read("src/x.ts");
    expect(once).toBe("import a from 'a';\nimport b from 'b';\n\nexport const value = 1;\n");
    const again = outputOf(await invokeTool(editTool, args, project.context()));
    expect(again).toMatchObject({ replacements: 0, alreadyApplied: true });
    expect(project.read("src/x.ts")).toBe(once);
  });

  it("fails with EditNoMatch when old does not occur and the edit is not applied", async () => {
    const project = makeProject({ "src/x.ts": SOURCE });
    const args = { path: "src/x.ts", old: "value = 3", new: "value = 4" };
    expect(codeOf(await invokeTool(editTool, args, project.context()))).toBe(
      "ToolTerminal/EditNoMatch",
    );
    expect(project.read("src/x.ts")).toBe(SOURCE);
  });

  it("does not take a missing deletion target for an applied edit", async () => {
    const project = makeProject({ "src/x.ts": SOURCE });
    const args = { path: "src/x.ts", old: "typo", new: "" };
    expect(codeOf(await invokeTool(editTool, args, project.context()))).toBe(
      "ToolTerminal/EditNoMatch",
    );
  });

  it("fails with EditAmbiguous when old occurs more than once, changing nothing", async () => {
    const project = makeProject({ "x.txt": "a = 1\nb = 1\n" });
    const outcome = await invokeTool(
      editTool,
      { path: "x.txt", old: "= 1", new: "= 2" },
      project.context(),
    );
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe("ToolTerminal/EditAmbiguous");
    expect(outcome.error.context).toEqual({ path: "x.txt", occurrences: 2 });
    expect(project.read("x.txt")).toBe("a = 1\nb = 1\n");
  });

  it("replaces every occurrence with replaceAll", async () => {
    const project = makeProject({ "x.txt": "a = 1\nb = 1\n" });
    const args = { path: "x.txt", old: "= 1", new: "= 2", replaceAll: true };
    const output = outputOf(await invokeTool(editTool, args, project.context()));
    expect(output).toMatchObject({ replacements: 2, alreadyApplied: false });
    expect(project.read("x.txt")).toBe("a = 2\nb = 2\n");
    expect(outputOf(await invokeTool(editTool, args, project.context()))).toMatchObject({
      alreadyApplied: true,
    });
  });

  it("writes atomically, leaving no temporary file, and keeps the file's permissions", async () => {
    const project = makeProject({ "run.sh": "echo one\n" });
    chmodSync(join(project.root, "run.sh"), 0o755);
    await invokeTool(editTool, { path: "run.sh", old: "one", new: "two" }, project.context());
    expect(project.read("run.sh")).toBe("echo two\n");
    expect(statSync(join(project.root, "run.sh")).mode & 0o777).toBe(0o755);
    expect(readdirSync(project.root).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it.each([
    ["missing.txt", "ToolTerminal/FileNotFound"],
    ["logo.png", "ToolTerminal/BinaryFile"],
  ])("refuses %s", async (path, code) => {
    const project = makeProject({ "logo.png": Buffer.from("a\0b") });
    expect(
      codeOf(await invokeTool(editTool, { path, old: "a", new: "b" }, project.context())),
    ).toBe(code);
  });

  it.each([
    { path: "x.txt", old: "", new: "y" },
    { path: "x.txt", old: "same", new: "same" },
    { path: "x.txt", old: "a" },
    { path: "x.txt", old: "a", new: "b", replaceAll: "yes" },
  ])("rejects invalid arguments %j", async (args) => {
    const project = makeProject({ "x.txt": "same a\n" });
    expect(codeOf(await invokeTool(editTool, args, project.context()))).toBe(
      "ToolTerminal/InvalidToolInput",
    );
    expect(project.read("x.txt")).toBe("same a\n");
  });

  it("summarizes a call as its path", () => {
    expect(editTool.summarize({ path: "src/x.ts", old: "a", new: "b" })).toBe("src/x.ts");
  });
});
