/** `stagechart/testing`: model-based testing of pipelines (paths, real-engine replays, coverage). */

// Coverage: which transitions the paths run took.
export {
  type Coverage,
  type CoverageOptions,
  transitionCoverage,
  type Uncovered,
} from "./coverage.js";
// Paths: every way through a pipeline, and a few that cover each of its transitions.
export { coveringPaths } from "./covering.js";
// The pipeline's model: a machine of stage outcomes, for tools such as @xstate/graph.
export {
  type ControlEventName,
  controlEventsFrom,
  type StageDoneEvent,
  stageDone,
} from "./events.js";
export { activeStages, modelMachine, type PathEnd, visitsOf } from "./model.js";
// Mutation score: how many seeded changes to a pipeline's rules its paths catch.
export {
  type MutantResult,
  type MutationOptions,
  type MutationReport,
  mutationScore,
} from "./mutation.js";
export {
  resultFor,
  type StageOutcome,
  type StageOutcomes,
  stageOutcomes,
  type UnreachableOutcome,
} from "./outcomes.js";
export {
  type PathCover,
  type PathList,
  type PathOptions,
  type PathStep,
  type PathStrategy,
  type PipelinePath,
  pipelinePaths,
} from "./paths.js";
export { type PathRecord, type PathRun, type RunPathOptions, runPath } from "./run-path.js";
// Running paths on the real engine, one by one or as vitest tests.
export type { Fixtures } from "./stand-ins.js";
export {
  type PathResult,
  type TestPipelineOptions,
  type TestReport,
  testPipeline,
} from "./test-pipeline.js";
export { type PathTestOptions, pathTests, type RegisterTest } from "./vitest.js";
