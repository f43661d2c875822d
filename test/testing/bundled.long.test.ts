import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/index.js";
import { coveringPaths, pipelinePaths, testPipeline } from "../../src/testing/index.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

/** Finding why task-lifecycle's one transition is left walks its model to 5 visits: some 5 s. */
describe("the bundled task-lifecycle, down the few of its paths that take every transition theirs take", () => {
  it("covers every transition of the graph but the one past the paths' visits, saying which bound takes it", async () => {
    const loaded = await loadPipelineFile(`${MACHINES_DIR}/task-lifecycle.yaml`);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const paths = coveringPaths(loaded.value, pipelinePaths(loaded.value));
    const report = await testPipeline(loaded.value, { paths });
    expect(report.failed).toBe(0);
    expect(report.coverage.transitions.uncovered).toEqual([
      {
        transition:
          "task-lifecycle.accept -> task-lifecycle.failed [xstate.done.actor.accept: failed]",
        reason: "beyond --max-visits 3: a path takes it with --max-visits 5",
      },
    ]);
  }, 60_000);
});
