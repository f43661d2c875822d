import { existsSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { globTool } from "../../src/tools/glob.js";
import { grepTool } from "../../src/tools/grep.js";
import { builtinTools, invokeTool, resolveInRoot } from "../../src/tools/index.js";
import { listFiles } from "../../src/tools/list-files.js";
import { allInside, ESCAPE_LINKS, makeEscapeWorld, OUTSIDE_NAME } from "./escape-links.js";
import { codeOf, makeProject, outputOf } from "./project.js";

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

describe("no link leads a tool out of the root", () => {
  /** A file reached through each escaping link. */
  const through: Record<(typeof ESCAPE_LINKS)[number], string> = {
    rootlink: "rootlink/etc/passwd",
    etclink: "etclink/passwd",
    up1: `up1/outside/${OUTSIDE_NAME}`,
    "src/inner/up3": `src/inner/up3/outside/${OUTSIDE_NAME}`,
    outdir: `outdir/${OUTSIDE_NAME}`,
    "outdir-rel": `outdir-rel/${OUTSIDE_NAME}`,
    sibling: `sibling/${OUTSIDE_NAME}`,
    outfile: "outfile",
    dangling: "dangling",
    "loop-a": "loop-a",
    chain: `chain/${OUTSIDE_NAME}`,
    "src/inner/deep-out": `src/inner/deep-out/${OUTSIDE_NAME}`,
  };
  const parentGlob = (file: string) =>
    file.includes("/") ? `${file.slice(0, file.lastIndexOf("/"))}/*` : file;
  const pattern = "root|OUTSIDE";

  const calls = (link: (typeof ESCAPE_LINKS)[number]): [string, Record<string, unknown>][] => {
    const file = through[link];
    const inner = link.startsWith("src/inner/") ? file.slice("src/inner/".length) : undefined;
    return [
      ["Read", { path: file }],
      ["Edit", { path: file, old: "root", new: "changed" }],
      ["Write", { path: file, content: "changed\n" }],
      ["Grep", { pattern, path: file }],
      ["Grep", { pattern, glob: file }],
      ["Grep", { pattern, glob: parentGlob(file) }],
      ...(inner
        ? [["Grep", { pattern, path: "src/inner", glob: parentGlob(inner) }] as const]
        : []),
      ["Glob", { pattern: parentGlob(file) }],
      ["Glob", { pattern: "*", path: link }],
    ] as [string, Record<string, unknown>][];
  };
  const variants = [
    ...ESCAPE_LINKS.flatMap((link) => calls(link).map(([tool, args]) => [tool, args] as const)),
    ["Glob", { pattern: "**/*" }],
    ["Glob", { pattern: "**" }],
    ["Grep", { pattern }],
    ["Grep", { pattern, glob: "**/*" }],
  ] as const;

  it.each(variants)("%s %j shows nothing outside and changes nothing there", async (name, args) => {
    const world = makeEscapeWorld();
    const before = world.outsideSnapshot();
    const tool = builtinTools().find((candidate) => candidate.name === name);
    if (!tool) expect.fail(`no tool ${name}`);
    const outcome = await invokeTool(tool, args, world.context());
    expect(world.leaks(outcome), JSON.stringify(outcome)).toBe(false);
    if (outcome.ok && name === "Glob") {
      expect(allInside(world.root, outputOf(outcome).files as string[])).toBe(true);
    }
    expect(world.outsideSnapshot()).toEqual(before);
    expect(existsSync(join(world.outside, "not-yet.txt"))).toBe(false);
  });

  it("the list-files walk lists no path that resolves outside, and keeps links that stay inside", async () => {
    const world = makeEscapeWorld();
    const files = await listFiles(world.root, world.root, "**/*", new AbortController().signal);
    expect(allInside(world.root, files)).toBe(true);
    expect(files).toContain("src/inner/own.txt");
    const throughAlias = await listFiles(
      world.root,
      world.root,
      "alias/*",
      new AbortController().signal,
    );
    expect(throughAlias).toEqual(["alias/own.ts"]);
  });

  it("Grep and Glob still follow a link that stays inside the root", async () => {
    const world = makeEscapeWorld();
    const glob = await invokeTool(globTool, { pattern: "alias/**/*.txt" }, world.context());
    expect(outputOf(glob).files).toEqual(["alias/inner/own.txt"]);
    const grep = await invokeTool(
      grepTool,
      { pattern: "inside", glob: "alias/*" },
      world.context(),
    );
    expect(outputOf(grep).matches).toBe("alias/own.ts:1: export const inside = 1;");
  });
});
