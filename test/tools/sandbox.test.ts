import { existsSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { builtinTools, invokeTool, resolveInRoot } from "../../src/tools/index.js";
import { codeOf, makeProject } from "./project.js";

const ESCAPES = [
  "../outside.txt",
  "/etc/passwd",
  "link-out.txt",
  "link-dir/inner.txt",
  "link-dir",
  "a/../../x",
  "dangling-out.txt",
  "nul\0byte.txt",
];

describe("resolveInRoot", () => {
  it("resolves relative paths inside the root, `..` included while it stays inside", () => {
    const project = makeProject({ "src/a.ts": "", "README.md": "" });
    expect(resolveInRoot(project.root, "src/a.ts")).toEqual({
      ok: true,
      value: join(project.root, "src/a.ts"),
    });
    expect(resolveInRoot(project.root, "src/../README.md")).toEqual({
      ok: true,
      value: join(project.root, "README.md"),
    });
    expect(resolveInRoot(project.root, ".")).toEqual({ ok: true, value: project.root });
  });

  it("resolves paths that do not exist yet to where they would be created", () => {
    const project = makeProject({ "src/a.ts": "" });
    expect(resolveInRoot(project.root, "src/new/deep.ts")).toEqual({
      ok: true,
      value: join(project.root, "src/new/deep.ts"),
    });
  });

  it("follows links that stay inside the root", () => {
    const project = makeProject({ "src/a.ts": "" });
    symlinkSync(join(project.root, "src"), join(project.root, "alias"));
    expect(resolveInRoot(project.root, "alias/a.ts")).toEqual({
      ok: true,
      value: join(project.root, "src/a.ts"),
    });
  });

  it.each(ESCAPES)("denies %j with ToolTerminal/SandboxEscape naming the path", (path) => {
    const project = makeProject();
    const result = resolveInRoot(project.root, path);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe("ToolTerminal/SandboxEscape");
    expect(result.error.message).toContain(path);
    expect(result.error.context).toEqual({ path });
  });

  it.each([
    ["../outside.txt", "leaves the project root"],
    ["a/../../x", "leaves the project root"],
    ["/etc/passwd", "is absolute"],
    ["link-out.txt", "symbolic link"],
    ["link-dir/inner.txt", "symbolic link"],
    ["nul\0byte.txt", "NUL byte"],
  ])("says why %j is denied", (path, why) => {
    const result = resolveInRoot(makeProject().root, path);
    expect(result.ok ? "ok" : result.error.message).toContain(why);
  });

  it("denies a link loop instead of guessing where it leads", () => {
    const project = makeProject();
    symlinkSync("loop-b", join(project.root, "loop-a"));
    symlinkSync("loop-a", join(project.root, "loop-b"));
    const result = resolveInRoot(project.root, "loop-a");
    expect(result.ok ? "ok" : result.error.code).toBe("ToolTerminal/SandboxEscape");
  });
});

describe("every path-taking tool stays inside the root", () => {
  const callWithPath: Record<string, (path: string) => Record<string, unknown>> = {
    Read: (path) => ({ path }),
    Grep: (path) => ({ pattern: "secret", path }),
    Glob: (path) => ({ pattern: "**/*", path }),
    Edit: (path) => ({ path, old: "secret", new: "changed" }),
    Write: (path) => ({ path, content: "changed\n" }),
  };
  const cases = Object.keys(callWithPath).flatMap((tool) =>
    ESCAPES.map((path) => [tool, path] as const),
  );

  it.each(cases)("%s refuses %j and touches nothing outside", async (toolName, path) => {
    const project = makeProject();
    const before = project.outsideSnapshot();
    const tool = builtinTools().find((candidate) => candidate.name === toolName);
    if (!tool) expect.fail(`no tool ${toolName}`);
    const args = callWithPath[toolName]?.(path);
    const outcome = await invokeTool(tool, args, project.context());
    expect(codeOf(outcome)).toBe("ToolTerminal/SandboxEscape");
    expect(project.outsideSnapshot()).toEqual(before);
    expect(existsSync(join(project.outside, "not-yet.txt"))).toBe(false);
    expect(existsSync(join(project.world, "x"))).toBe(false);
  });
});
