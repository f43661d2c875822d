/**
 * `stagechart`: the library behind the CLI. Only what an app needs to load, run, store and
 * inspect pipelines is exported here; everything else is internal and may change.
 */

// Compiling: a pipeline as a plain XState machine, and its graph.
export { renderGraph } from "./compiler/index.js";
// Definitions: load and validate pipelines and stages (loaders return diagnostics, never throw).
export {
  type Diagnostic,
  definePipeline,
  formatDiagnostic,
  type JsonValue,
  type LoadResult,
  loadPipeline,
  loadPipelineFile,
  loadStageFile,
  type PipelineDefinition,
  parseStageDefinition,
  type StageDefinition,
} from "./definitions/index.js";
// Errors: values with a class and a registered code.
export {
  ERROR_CODES,
  type ErrorClass,
  type ErrorCode,
  type ErrorView,
  isErrorCode,
  isStagechartError,
  type Result,
  StagechartError,
} from "./errors.js";
// Audit: what a run did, event by event.
export { type AuditEvent, MemoryAuditLog } from "./events/audit.js";
// Inspect: the inspect page over a store, and a run streamed to it live.
export { createRunInspector, startInspectServer } from "./inspect/index.js";

// Models: a model spec (provider:model, scripted:file, …), prices, and scripted models for tests.
export {
  createScriptedModel,
  createScriptedModelFromFile,
  loadPriceFile,
  type ModelHandle,
  type ModelPrice,
  type PriceTable,
  resolveModelSpec,
  type Script,
  type ScriptEntry,
} from "./models/index.js";
// Running: the host a run works in, its interactors, the runs themselves, and their traces.
export {
  type ControlOutcome,
  callbackInteractor,
  compilePipeline,
  createFork,
  createHost,
  createRunControl,
  createTracing,
  endRefusedFork,
  type ForkOptions,
  forkRun,
  type Host,
  type HostOptions,
  type Interactor,
  type PreparedRun,
  type PrunedRun,
  type PruneOptions,
  type PruneReport,
  pruneRuns,
  type ReopenOptions,
  type ResumeOptions,
  type RunControl,
  type RunControlOptions,
  type RunControlRequest,
  type RunHandle,
  type RunOptions,
  type RunResult,
  type RunStore,
  refusalOf,
  reopenRun,
  resumeRun,
  runHistory,
  runStage,
  type StepStore,
  startRun,
  type Tracing,
  type TracingOptions,
  terminalInteractor,
  tracingFromEnv,
  tracingWith,
  type UnansweredGrants,
} from "./runtime/index.js";
// Stores: where runs are kept (SQLite on one machine, PostgreSQL shared by workers).
export {
  openStore,
  PostgresStore,
  SqliteStore,
  type StepCommit,
  startWorkerPool,
} from "./store/index.js";
// Tools: MCP servers as tools for a host.
export { type AnyTool, attachMcpServers, type ToolOutcome } from "./tools/index.js";
