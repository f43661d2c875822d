import { existsSync } from "node:fs";
import { basename } from "node:path";
import { glob } from "tinyglobby";
import { describe, it } from "vitest";
import { loadPipelineFile, type PipelineDefinition } from "../../src/index.js";
import { type Fixtures, pathTests } from "../../src/testing/index.js";
import { readFixtureFile } from "../../src/testing/path-file.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

const files = await glob("*.yaml", {
  cwd: MACHINES_DIR,
  absolute: true,
  ignore: ["*.script.yaml"],
});

/**
 * A pipeline's bundled fixtures (`<pipeline>.fixtures.json`), for the code stages a test run
 * cannot drive alone: arena-debate's identity check under a sampled ctx, the failures of its
 * code stages, its sandbox's tasks (Bash, which nobody approves in a test run).
 */
async function fixturesOf(
  file: string,
  pipeline: PipelineDefinition | undefined,
): Promise<Fixtures | undefined> {
  const fixtures = file.replace(/\.yaml$/, ".fixtures.json");
  if (!existsSync(fixtures)) return undefined;
  const read = await readFixtureFile(fixtures, pipeline);
  if (!read.ok) throw read.error;
  return read.value;
}

/**
 * task-lifecycle's 782 paths (each phase's `output.next` split, up to 3 visits each) would take
 * over a minute to drive: a few that take every transition the model's paths take are driven.
 * Its `accept → failed` lies beyond the paths' 3 visits, so it is the one transition left
 * uncovered: bundled.long.test.ts checks that, since finding why walks the model to 5 visits.
 */
const COVERING = new Set(["task-lifecycle.yaml"]);

for (const file of files.sort()) {
  const loaded = await loadPipelineFile(file);
  const fixtures = await fixturesOf(file, loaded.ok ? loaded.value : undefined);
  describe(`the bundled pipeline ${basename(file)}, down every path`, () => {
    if (!loaded.ok) {
      it("loads", () => {
        throw new Error(JSON.stringify(loaded.diagnostics));
      });
      return;
    }
    const covering = COVERING.has(basename(file));
    // With fixtures, the paths that cover the transitions: arena-debate has 54 to its end states.
    pathTests(loaded.value, it, {
      coverage: !covering,
      covering,
      ...(fixtures && { fixtures, cover: "transitions" }),
    });
  });
}
