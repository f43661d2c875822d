/** `stagechart/testing`: model-based testing of pipelines (paths, real-engine replays, coverage). */
export { type Coverage, graphTransitions, transitionCoverage, type Uncovered } from "./coverage.js";
export { coveringPaths, modelledTransitions } from "./covering.js";
export type { Fixtures } from "./drive.js";
export {
  type ControlEventName,
  controlEventOf,
  controlEventsFrom,
  type StageDoneEvent,
  stageDone,
} from "./events.js";
export { activeStages, modelMachine, type PathEnd } from "./model.js";
export {
  resultFor,
  type StageOutcome,
  type StageOutcomes,
  stageOutcomes,
  type UnreachableOutcome,
} from "./outcomes.js";
export { readFixtureFile, readPathFile } from "./path-file.js";
export {
  PATH_STRATEGIES,
  type PathList,
  type PathOptions,
  type PathStep,
  type PathStrategy,
  type PipelinePath,
  pipelinePaths,
  sampleContext,
} from "./paths.js";
export { type PathRecord, type PathRun, type RunPathOptions, runPath } from "./run-path.js";
export {
  type PathResult,
  type TestPipelineOptions,
  type TestReport,
  testPipeline,
} from "./test-pipeline.js";
export { type PathTestOptions, pathTests, type RegisterTest } from "./vitest.js";
