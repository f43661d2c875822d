import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/index.js";
import {
  type Fixtures,
  type PathResult,
  pipelinePaths,
  testPipeline,
} from "../../src/testing/index.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

const loaded = await loadPipelineFile(join(MACHINES_DIR, "code-review.yaml"));
if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
const codeReview = loaded.value;

describe("testPipeline's onPathDone", () => {
  it("is told of each path as its run ends, in the list's order, with how many of how many", async () => {
    // The fixtures are read as each path is driven: how many reads there were when a path was
    // told of says how far the driving had got.
    let reads = 0;
    const fixtures = new Proxy<Fixtures>(
      {},
      {
        get: (target, key) => {
          reads += 1;
          return Reflect.get(target, key);
        },
      },
    );
    const told: { result: PathResult; done: number; total: number; readsThen: number }[] = [];
    const report = await testPipeline(codeReview, {
      fixtures,
      onPathDone: (result, { done, total }) => told.push({ result, done, total, readsThen: reads }),
    });
    const count = pipelinePaths(codeReview, { cover: "transitions" }).paths.length;
    expect(count).toBeGreaterThan(2);
    expect(told.map((t) => t.result)).toEqual(report.paths);
    expect(told.map((t) => [t.done, t.total])).toEqual(
      Array.from({ length: count }, (_, i) => [i + 1, count]),
    );
    // The first path was told of before the other paths were driven, each one before the next.
    expect(told[0]?.readsThen).toBeGreaterThan(0);
    expect(told.at(-1)?.readsThen).toBe(reads);
    for (const [i, t] of told.entries())
      if (i > 0) expect(t.readsThen).toBeGreaterThan(told[i - 1]?.readsThen ?? 0);
  });
});
