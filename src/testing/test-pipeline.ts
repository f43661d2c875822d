import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { type Coverage, type CoverageOptions, transitionCoverage } from "./coverage.js";
import { type PathList, type PathOptions, pipelinePaths } from "./paths.js";
import { type PathRecord, runPath } from "./run-path.js";
import type { Fixtures } from "./stand-ins.js";

/** How one path's run went: passed (`ok`) or failed, and why. */
export interface PathResult {
  id: string;
  ok: boolean;
  expected: PathRecord;
  actual: PathRecord;
  reason?: string;
}

export interface TestReport {
  passed: number;
  failed: number;
  paths: PathResult[];
  coverage: Coverage;
}

export interface TestPipelineOptions extends PathOptions {
  /** A saved `paths --json` list to replay instead of generating the paths. */
  paths?: PathList;
  timeoutMs?: number;
  fixtures?: Fixtures;
  /**
   * Told of each path as soon as its run ended (paths run one after another, in the list's
   * order): its result, and how many of how many paths have ended.
   */
  onPathDone?: (result: PathResult, progress: { done: number; total: number }) => void;
}

/**
 * Drives the real engine down every path — generated (by default as few as take every
 * transition, `cover: "transitions"`), or a saved `paths --json` list replayed against the
 * pipeline as it is now — and measures transition coverage.
 */
export async function testPipeline(
  pipeline: PipelineDefinition,
  options: TestPipelineOptions = {},
): Promise<TestReport> {
  const list =
    options.paths ?? pipelinePaths(pipeline, { ...options, cover: options.cover ?? "transitions" });
  const runs = [];
  const results: PathResult[] = [];
  for (const path of list.paths) {
    const run = await runPath(pipeline, path, {
      ctx: list.ctx ?? options.ctx,
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      ...(options.fixtures && { fixtures: options.fixtures }),
    });
    const { id, ok, expected, actual, reason } = run;
    const result = { id, ok, expected, actual, ...(reason !== undefined && { reason }) };
    runs.push(run);
    results.push(result);
    options.onPathDone?.(result, { done: results.length, total: list.paths.length });
  }
  const passed = results.filter((result) => result.ok).length;
  return {
    passed,
    failed: results.length - passed,
    paths: results,
    coverage: transitionCoverage(pipeline, runs, coverageOptions(list, options)),
  };
}

/** What coverage checks its reasons with: the list's own, and the walk the paths came from. */
export function coverageOptions(list: PathList, options: PathOptions): CoverageOptions {
  return {
    ...(list.untaken && { untaken: list.untaken }),
    ctx: list.ctx,
    ...(options.maxVisits !== undefined && { maxVisits: options.maxVisits }),
    ...(options.events && { events: options.events }),
  };
}
