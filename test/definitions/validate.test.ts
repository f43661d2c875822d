import { cpSync, type PathLike } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import { validatePaths } from "../../src/definitions/validate.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";
import { STAGES_DIR, tempDir } from "../support/stages.js";

/** The code modules (`.js`) whose text is read through `fs` (importing one reads it elsewhere). */
const moduleReads = vi.hoisted(() => [] as string[]);

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const readFileSync = ((path: PathLike, options?: unknown) => {
    if (String(path).endsWith(".js")) moduleReads.push(String(path));
    return fs.readFileSync(path, options as BufferEncoding);
  }) as typeof fs.readFileSync;
  return { ...fs, readFileSync };
});

beforeEach(() => {
  moduleReads.length = 0;
});

function bundledCopy(): string {
  const root = tempDir();
  cpSync(MACHINES_DIR, join(root, "machines"), { recursive: true });
  cpSync(STAGES_DIR, join(root, "stages"), { recursive: true });
  return root;
}

describe("validating paths", () => {
  it("imports the pipelines' code modules but does not hash them: the hash is a definition's fingerprint, which validating keeps none of", async () => {
    const root = bundledCopy();
    const report = await validatePaths([join(root, "machines"), join(root, "stages")]);
    expect(report.diagnostics).toEqual([]);
    expect(moduleReads).toEqual([]);
    // Loading a pipeline for a run hashes each module it names, and the modules they import.
    const loaded = await loadPipelineFile(join(root, "machines", "task-lifecycle.yaml"));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    expect(Object.keys(loaded.value.codeModules ?? {})).not.toEqual([]);
    expect(moduleReads.length).toBeGreaterThan(0);
  });
});
