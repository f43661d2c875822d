import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { transitionCoverage } from "./coverage.js";
import { coveringPaths } from "./covering.js";
import { type PathList, type PathOptions, pipelinePaths } from "./paths.js";
import { type PathRun, runPath } from "./run-path.js";
import type { Fixtures } from "./stand-ins.js";
import { coverageOptions } from "./test-pipeline.js";

/** vitest's `it` (or `test`), or any runner's function of the same shape. */
export type RegisterTest = (name: string, body: () => Promise<void>, timeoutMs?: number) => void;

export interface PathTestOptions extends PathOptions {
  /** A saved `paths --json` list to replay instead of generating the paths. */
  paths?: PathList;
  /** Drive only a few of the paths that together take every transition they take (`coveringPaths`). */
  covering?: boolean;
  /** Register one more test, last, requiring every transition of the graph to be covered. */
  coverage?: boolean;
  /** Per test (default 60 s); a run still going a little before that is stopped, so its path fails with its own reason. */
  timeoutMs?: number;
  /** What code and command stages end with instead of running, by stage id (`test --fixtures`). */
  fixtures?: Fixtures;
}

/**
 * Registers one test per path of a pipeline, each driving the real engine down it (`runPath`),
 * plus, with `coverage`, one that every transition was covered. Call it in a `describe` of a
 * test file: `pathTests(pipeline, it)`.
 */
export function pathTests(
  pipeline: PipelineDefinition,
  test: RegisterTest,
  options: PathTestOptions = {},
): void {
  const listed = options.paths ?? pipelinePaths(pipeline, options);
  const list = options.covering ? coveringPaths(pipeline, listed) : listed;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const runTimeoutMs = timeoutMs - Math.min(1_000, timeoutMs / 10);
  const runs: PathRun[] = [];
  for (const path of list.paths) {
    const steps = path.steps.map((s) => `${s.stage}: ${s.outcome}`).join(" → ");
    test(
      `${path.id} (${path.end}): ${steps}`,
      async () => {
        const run = await runPath(pipeline, path, {
          ctx: list.ctx,
          timeoutMs: runTimeoutMs,
          ...(options.fixtures && { fixtures: options.fixtures }),
        });
        runs.push(run);
        if (!run.ok) throw new Error(`${path.id}: ${run.reason}`);
      },
      timeoutMs,
    );
  }
  if (options.coverage)
    test("covers every transition of the graph", async () => {
      const { uncovered } = transitionCoverage(
        pipeline,
        runs,
        coverageOptions(list, options),
      ).transitions;
      if (uncovered.length > 0)
        throw new Error(
          `uncovered: ${uncovered.map((u) => `${u.transition} (${u.reason})`).join("; ")}`,
        );
    });
}
