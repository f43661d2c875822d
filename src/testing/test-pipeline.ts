import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { type Coverage, transitionCoverage } from "./coverage.js";
import type { Fixtures } from "./drive.js";
import { type PathList, type PathOptions, pipelinePaths } from "./paths.js";
import { type PathRecord, runPath } from "./run-path.js";

export interface TestReport {
  passed: number;
  failed: number;
  paths: { id: string; ok: boolean; expected: PathRecord; actual: PathRecord; reason?: string }[];
  coverage: Coverage;
}

/**
 * Drives the real engine down every path — generated, or a saved `paths --json` list replayed
 * against the pipeline as it is now — and measures transition coverage.
 */
export async function testPipeline(
  pipeline: PipelineDefinition,
  options: PathOptions & { paths?: PathList; timeoutMs?: number; fixtures?: Fixtures } = {},
): Promise<TestReport> {
  const list = options.paths ?? pipelinePaths(pipeline, options);
  const runs = [];
  for (const path of list.paths)
    runs.push(
      await runPath(pipeline, path, {
        ctx: list.ctx ?? options.ctx,
        ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
        ...(options.fixtures && { fixtures: options.fixtures }),
      }),
    );
  const passed = runs.filter((run) => run.ok).length;
  return {
    passed,
    failed: runs.length - passed,
    paths: runs.map(({ id, ok, expected, actual, reason }) => ({
      id,
      ok,
      expected,
      actual,
      ...(reason !== undefined && { reason }),
    })),
    coverage: transitionCoverage(pipeline, runs),
  };
}
