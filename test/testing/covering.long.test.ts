import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/index.js";
import { coveringPaths, modelledTransitions } from "../../src/testing/covering.js";
import { pipelinePaths } from "../../src/testing/paths.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

const loaded = await loadPipelineFile(`${MACHINES_DIR}/task-lifecycle.yaml`);
if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
const taskLifecycle = loaded.value;

// 782 paths, each walked on the model: some 40 s, so it runs under `npm run test:long`.
describe("coveringPaths of task-lifecycle", () => {
  it("keeps a few of the paths that together take every transition all of them take", () => {
    const all = pipelinePaths(taskLifecycle);
    const taken = (paths: typeof all.paths) =>
      new Set(paths.flatMap((p) => modelledTransitions(taskLifecycle, all.ctx, p.steps)));
    const few = coveringPaths(taskLifecycle, all);
    expect(few.paths.length).toBeLessThan(all.paths.length / 10);
    expect([...taken(few.paths)].sort()).toEqual([...taken(all.paths)].sort());
    expect(few.paths.every((p) => all.paths.includes(p))).toBe(true);
  });
});
