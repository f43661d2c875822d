import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/pipeline.js";
import { BUNDLED_MACHINES } from "../../src/paths.js";
import { pipelinePaths } from "../../src/testing/index.js";

const loaded = await loadPipelineFile(join(BUNDLED_MACHINES, "arena-debate.yaml"));
if (!loaded.ok) throw new Error("arena-debate does not load");
const pipeline = loaded.value;

const trail = (steps: { stage: string; outcome: string }[]) =>
  steps.map((s) => `${s.stage}: ${s.outcome}`);

/**
 * The model of arena-debate goes past its code stages: a code stage's output is some object the
 * model cannot see into, so a prompt reading a field of it (`classify` reads
 * `ctx.upstream[0].output.memory`, from load-context) is not taken to be refused.
 */
describe("arena-debate's paths", () => {
  it("reach done through the debate, the decision and the audit", () => {
    const { paths } = pipelinePaths(pipeline);
    const done = paths.filter((p) => p.end === "done").map((p) => trail(p.steps));
    expect(done.length).toBeGreaterThan(0);
    expect(done[0]).toContain("classify: ok");
    expect(done[0]).toContain("audit: ok");
  });
});
