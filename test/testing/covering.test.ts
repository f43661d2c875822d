import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/index.js";
import { coveringPaths, modelledTransitions } from "../../src/testing/covering.js";
import { pipelinePaths } from "../../src/testing/paths.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

// task-lifecycle's 782 paths are checked the same way in covering.long.test.ts.
describe.each(["code-review-parallel", "arena-debate"])("coveringPaths of %s", (name) => {
  it("keeps a few of the paths that together take every transition all of them take", async () => {
    const loaded = await loadPipelineFile(`${MACHINES_DIR}/${name}.yaml`);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const pipeline = loaded.value;
    const all = pipelinePaths(pipeline);
    const taken = (paths: typeof all.paths) =>
      new Set(paths.flatMap((p) => modelledTransitions(pipeline, all.ctx, p.steps)));
    const few = coveringPaths(pipeline, all);
    expect(few.paths.length).toBeLessThan(all.paths.length / 2);
    expect([...taken(few.paths)].sort()).toEqual([...taken(all.paths)].sort());
    expect(few.paths.every((p) => all.paths.includes(p))).toBe(true);
  });
});
