import { cpSync, type Dirent, type PathLike } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { expandDefinitionPaths } from "../../src/definitions/files.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";
import { STAGES_DIR, tempDir } from "../support/stages.js";

/** The file-system calls expanding paths makes: what it asks of each path, counted through the real `fs`. */
const calls = vi.hoisted(() => ({ stats: [] as string[], listings: [] as string[] }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const statSync = ((path: PathLike, options?: object) => {
    calls.stats.push(String(path));
    return fs.statSync(path, options);
  }) as typeof fs.statSync;
  const readdirSync = ((path: PathLike, options?: object) => {
    calls.listings.push(String(path));
    return fs.readdirSync(path, options as { withFileTypes: true });
  }) as typeof fs.readdirSync;
  return { ...fs, statSync, readdirSync };
});

vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs/promises")>();
  const stat = ((path: PathLike, options?: object) => {
    calls.stats.push(String(path));
    return fs.stat(path, options);
  }) as typeof fs.stat;
  const readdir = ((path: PathLike, options?: object) => {
    calls.listings.push(String(path));
    return fs.readdir(path, options as { withFileTypes: true }) as Promise<Dirent[]>;
  }) as typeof fs.readdir;
  return { ...fs, stat, readdir };
});

beforeEach(() => {
  calls.stats.length = 0;
  calls.listings.length = 0;
});

describe("expanding the bundled machines and stages", () => {
  it("lists each directory once and asks nothing more of a regular file its listing already names", async () => {
    const root = tempDir();
    cpSync(MACHINES_DIR, join(root, "machines"), { recursive: true });
    cpSync(STAGES_DIR, join(root, "stages"), { recursive: true });
    const paths = [join(root, "machines"), join(root, "stages")];
    const expanded = await expandDefinitionPaths(paths);
    expect(expanded.files.length).toBeGreaterThan(30);
    expect(expanded.workflows.length).toBe(2);
    const listed = calls.listings.map((path) => path.slice(root.length + 1));
    expect(listed.sort()).toEqual([
      "machines",
      "machines/arena-debate",
      "machines/pi-release",
      "machines/task-lifecycle",
      "stages",
      "stages/arena-debate",
      "stages/task-lifecycle",
    ]);
    // Each path given is looked at once; the files found in listings are not.
    expect(calls.stats.sort()).toEqual([...paths].sort());
  });
});
