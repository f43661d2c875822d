import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, expect } from "vitest";
import {
  DEFAULT_TOOL_LIMITS,
  type ToolContext,
  type ToolLimits,
  type ToolOutcome,
} from "../../src/tools/index.js";

/**
 * A temporary world: `root/` is the project, `outside/` and `outside.txt` sit next to it.
 * Inside the root, `link-out.txt` and `link-dir` are symbolic links pointing outside.
 */
export interface Project {
  world: string;
  root: string;
  outside: string;
  context(options?: { signal?: AbortSignal; limits?: Partial<ToolLimits> }): ToolContext;
  write(files: Record<string, string | Uint8Array>): void;
  read(path: string): string;
  /** Every file under `outside/` with its content, to show a call touched nothing there. */
  outsideSnapshot(): Record<string, string>;
}

const created: string[] = [];
afterEach(() => {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
});

export function makeProject(files: Record<string, string | Uint8Array> = {}): Project {
  const world = realpathSync(mkdtempSync(join(tmpdir(), "stagechart-tools-")));
  created.push(world);
  const root = join(world, "root");
  const outside = join(world, "outside");
  mkdirSync(join(outside, "dir"), { recursive: true });
  mkdirSync(root);
  writeFileSync(join(world, "outside.txt"), "secret next to the root\n");
  writeFileSync(join(outside, "secret.txt"), "secret outside\n");
  writeFileSync(join(outside, "dir", "inner.txt"), "inner secret\n");
  symlinkSync(join(outside, "secret.txt"), join(root, "link-out.txt"));
  symlinkSync(join(outside, "dir"), join(root, "link-dir"));
  symlinkSync(join(outside, "not-yet.txt"), join(root, "dangling-out.txt"));

  const project: Project = {
    world,
    root,
    outside,
    context: (options = {}) => ({
      root,
      signal: options.signal ?? new AbortController().signal,
      limits: { ...DEFAULT_TOOL_LIMITS, ...options.limits },
    }),
    write(more) {
      for (const [name, content] of Object.entries(more)) {
        mkdirSync(dirname(join(root, name)), { recursive: true });
        writeFileSync(join(root, name), content);
      }
    },
    read: (path) => readFileSync(join(root, path), "utf8"),
    outsideSnapshot() {
      const snapshot: Record<string, string> = {
        "../outside.txt": readFileSync(join(world, "outside.txt"), "utf8"),
      };
      for (const entry of readdirSync(outside, { recursive: true, withFileTypes: true })) {
        if (!entry.isFile()) continue;
        const file = join(entry.parentPath, entry.name);
        snapshot[file.slice(outside.length + 1)] = readFileSync(file, "utf8");
      }
      return snapshot;
    },
  };
  project.write(files);
  return project;
}

/** The output of a successful call; fails the test with the error otherwise. */
export function outputOf(outcome: ToolOutcome): Record<string, unknown> {
  if (!outcome.ok)
    expect.fail(`expected success, got ${outcome.error.code}: ${outcome.error.message}`);
  return outcome.output as Record<string, unknown>;
}

/** The error code of a failed call, or "ok". */
export const codeOf = (outcome: ToolOutcome): string => (outcome.ok ? "ok" : outcome.error.code);
