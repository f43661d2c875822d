import { basename } from "node:path";
import { glob } from "tinyglobby";
import { describe, it } from "vitest";
import { loadPipelineFile } from "../../src/index.js";
import { pathTests } from "../../src/testing/index.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

/**
 * arena-debate's LLM stages read what its code stages compute (ratings, tallies, the ruling),
 * which no fixture of a path supplies, so most of its paths cannot be driven (README, "The arena
 * debate"): its paths are checked in test/pipelines/arena-debate-paths.test.ts and its runs, on
 * its scripts, in test/pipelines/arena-debate*.test.ts.
 */
const files = await glob("*.yaml", {
  cwd: MACHINES_DIR,
  absolute: true,
  ignore: ["*.script.yaml", "arena-debate.yaml"],
});

/**
 * task-lifecycle's 782 paths (each phase's `output.next` split, up to 3 visits each) would take
 * over a minute to drive: a few that take every transition the model's paths take are driven.
 * Its `accept → failed` lies beyond the paths' 3 visits, so it is the one transition left
 * uncovered: bundled.long.test.ts checks that, since finding why walks the model to 5 visits.
 */
const COVERING = new Set(["task-lifecycle.yaml"]);

for (const file of files.sort()) {
  const loaded = await loadPipelineFile(file);
  describe(`the bundled pipeline ${basename(file)}, down every path`, () => {
    if (!loaded.ok) {
      it("loads", () => {
        throw new Error(JSON.stringify(loaded.diagnostics));
      });
      return;
    }
    const covering = COVERING.has(basename(file));
    pathTests(loaded.value, it, { coverage: !covering, covering });
  });
}
