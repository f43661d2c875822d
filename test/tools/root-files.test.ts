import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { editTool } from "../../src/tools/edit.js";
import { globTool } from "../../src/tools/glob.js";
import { grepTool } from "../../src/tools/grep.js";
import { type AnyTool, invokeTool, type ToolOutcome } from "../../src/tools/index.js";
import { readTool } from "../../src/tools/read.js";
import { RootDirectory } from "../../src/tools/root-files.js";
import { writeTool } from "../../src/tools/write.js";
import { OUTSIDE_CONTENT, OUTSIDE_NAME } from "./escape-links.js";
import { startSwapping } from "./link-swapper.js";
import { makeProject } from "./project.js";

/** How long each tool is hammered, and at most how many calls it gets. */
const RACE_MS = 700;
const MAX_CALLS = 2000;

const OUTSIDE_TEXT = `${OUTSIDE_CONTENT} TOKEN\n`;

/**
 * A root whose `data/target.txt` says "inside TOKEN TOKEN", beside a directory `race-outside/` with a
 * `target.txt` and an OUTSIDE_NAME of its own, both saying OUTSIDE_CONTENT.
 */
function raceWorld() {
  const project = makeProject({ "data/target.txt": "inside TOKEN TOKEN\n" });
  const outsideDir = join(project.world, "race-outside");
  mkdirSync(outsideDir);
  writeFileSync(join(outsideDir, "target.txt"), OUTSIDE_TEXT);
  writeFileSync(join(outsideDir, OUTSIDE_NAME), OUTSIDE_TEXT);
  const outsideState = () =>
    JSON.stringify(
      readdirSync(outsideDir, { recursive: true, withFileTypes: true })
        .map((entry) => {
          const path = join(entry.parentPath, entry.name);
          return [path, entry.isFile() ? readFileSync(path, "utf8") : "(not a file)"];
        })
        .sort(),
    );
  const untouched = outsideState();
  return {
    project,
    /** Whether anything in `race-outside/` was written, created or removed; puts it back. */
    outsideChanged(): boolean {
      if (outsideState() === untouched) return false;
      for (const name of readdirSync(outsideDir))
        rmSync(join(outsideDir, name), { recursive: true });
      writeFileSync(join(outsideDir, "target.txt"), OUTSIDE_TEXT);
      writeFileSync(join(outsideDir, OUTSIDE_NAME), OUTSIDE_TEXT);
      return true;
    },
    /** `data/target.txt`, or `data`, and what its link points at while it is swapped out. */
    swapped(what: "file" | "directory"): [string, string] {
      return what === "file"
        ? [join(project.root, "data/target.txt"), join(outsideDir, "target.txt")]
        : [join(project.root, "data"), outsideDir];
    },
  };
}

type RaceWorld = ReturnType<typeof raceWorld>;

interface RaceCase {
  tool: AnyTool;
  swapped: "file" | "directory";
  args: (call: number) => Record<string, unknown>;
  /** Whether this call's outcome, or what it did, reached outside the root. */
  escaped: (outcome: ToolOutcome, world: RaceWorld) => boolean;
}

/** An outcome that shows the outside files' content or name. */
const shows = (outcome: ToolOutcome, text: string) =>
  outcome.ok && JSON.stringify(outcome.output).includes(text);

const showsOutside = (outcome: ToolOutcome) => shows(outcome, OUTSIDE_CONTENT);

/** Flips TOKEN and TOKEM, so every call changes the file. */
const editArgs = (call: number) => ({
  path: "data/target.txt",
  old: call % 2 === 0 ? "TOKEN" : "TOKEM",
  new: call % 2 === 0 ? "TOKEM" : "TOKEN",
  replaceAll: true,
});

/**
 * An Edit that changed the outside file, or read it: the file inside has TOKEN (or TOKEM) twice,
 * the outside one once, and what an Edit reads it writes back.
 */
const editedOutside = (outcome: ToolOutcome, world: RaceWorld) =>
  world.outsideChanged() ||
  (outcome.ok && (outcome.output as { replacements: number }).replacements === 1);

const CASES: Record<string, RaceCase> = {
  "Read of a file swapped for a link": {
    tool: readTool,
    swapped: "file",
    args: () => ({ path: "data/target.txt" }),
    escaped: showsOutside,
  },
  "Read through a directory swapped for a link": {
    tool: readTool,
    swapped: "directory",
    args: () => ({ path: "data/target.txt" }),
    escaped: showsOutside,
  },
  "Grep of a file swapped for a link": {
    tool: grepTool,
    swapped: "file",
    args: () => ({ pattern: "TOKEN", path: "data/target.txt" }),
    escaped: showsOutside,
  },
  "Grep of the root, with a directory swapped for a link": {
    tool: grepTool,
    swapped: "directory",
    args: () => ({ pattern: "TOKEN" }),
    escaped: showsOutside,
  },
  "Glob through a directory swapped for a link": {
    tool: globTool,
    swapped: "directory",
    args: () => ({ pattern: "data/*" }),
    escaped: (outcome) => shows(outcome, OUTSIDE_NAME),
  },
  "Edit of a file swapped for a link": {
    tool: editTool,
    swapped: "file",
    args: editArgs,
    escaped: editedOutside,
  },
  "Edit through a directory swapped for a link": {
    tool: editTool,
    swapped: "directory",
    args: editArgs,
    escaped: editedOutside,
  },
  "Write of a file swapped for a link": {
    tool: writeTool,
    swapped: "file",
    args: (call) => ({ path: "data/target.txt", content: `written ${call}\n` }),
    escaped: (_, world) => world.outsideChanged(),
  },
  "Write into a directory swapped for a link": {
    tool: writeTool,
    swapped: "directory",
    args: (call) => ({ path: "data/deeper/new.txt", content: `written ${call}\n` }),
    escaped: (_, world) => world.outsideChanged(),
  },
};

describe("every file tool opens only what is inside the root at the moment it opens it", () => {
  it.each(Object.entries(CASES))(
    "%s: nothing outside is ever returned or written",
    async (_, { tool, swapped, args, escaped }) => {
      const world = raceWorld();
      const context = world.project.context();
      // Unraced, the call works and stays inside.
      const first = await invokeTool(tool, args(0), context);
      expect(first.ok && !escaped(first, world)).toBe(true);

      const swapper = await startSwapping(...world.swapped(swapped));
      let calls = 0;
      let escapes = 0;
      const until = Date.now() + RACE_MS;
      try {
        for (; calls < MAX_CALLS && Date.now() < until; calls += 1) {
          const outcome = await invokeTool(tool, args(calls + 1), context);
          if (escaped(outcome, world)) escapes += 1;
        }
      } finally {
        await swapper.stop();
      }
      // An Edit that read the outside file would have written its text back inside.
      expect(world.project.read("data/target.txt")).not.toContain(OUTSIDE_CONTENT);
      expect(escapes, `${escapes} of ${calls} calls reached outside the root`).toBe(0);
    },
  );
});

describe("RootDirectory: a directory opened inside the root", () => {
  const world = () => {
    const project = makeProject({ "data/target.txt": "inside\n" });
    const data = join(project.root, "data");
    return { project, data };
  };
  /** Puts a link to the outside directory where `data` was, and returns where `data` went. */
  const swapForLink = ({ project, data }: ReturnType<typeof world>) => {
    renameSync(data, `${data}.moved`);
    symlinkSync(project.outside, data);
    return `${data}.moved`;
  };

  it("is not opened when it has become a link since its path was checked", () => {
    const checked = world();
    swapForLink(checked);
    expect(() => RootDirectory.open(checked.project.root, checked.data, false)).toThrow(
      expect.objectContaining({ code: "ELOOP" }),
    );
  });

  it("does not read a file that has become a link since its path was checked", () => {
    const { project, data } = world();
    const directory = RootDirectory.open(project.root, data, false);
    rmSync(join(data, "target.txt"));
    symlinkSync(join(project.outside, "secret.txt"), join(data, "target.txt"));
    expect(() => directory.readFile("target.txt", 100)).toThrow(
      expect.objectContaining({ code: "ELOOP" }),
    );
    directory.close();
  });

  it("reads and writes in itself, wherever its path leads since it was opened", async () => {
    const opened = world();
    const directory = RootDirectory.open(opened.project.root, opened.data, false);
    const moved = swapForLink(opened);
    const read = directory.readFile("target.txt", 100).read;
    expect(read.kind === "file" && read.bytes.toString()).toBe("inside\n");
    await directory.writeFileAtomic("new.txt", "written\n");
    directory.close();
    expect(readFileSync(join(moved, "new.txt"), "utf8")).toBe("written\n");
    expect(existsSync(join(opened.project.outside, "new.txt"))).toBe(false);
  });

  it("makes missing directories on the way, each inside the one before", () => {
    const { project } = world();
    const deep = join(project.root, "data/a/b");
    RootDirectory.open(project.root, deep, true).close();
    expect(existsSync(deep)).toBe(true);
  });
});
