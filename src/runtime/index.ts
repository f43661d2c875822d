export type { Interactor } from "../compiler/interactor.js";
export { answerProblems, type ResumeInput } from "./ask-stages.js";
export {
  type CreatedFork,
  createFork,
  endRefusedFork,
  type ForkOptions,
  type ForkRefusal,
  type ForkSettings,
  type ForkStore,
  forkRun,
} from "./fork-run.js";
export {
  createHost,
  type Host,
  type HostLimits,
  type HostOptions,
  type UnansweredGrants,
} from "./host.js";
export {
  askInteractors,
  callbackInteractor,
  grantAnswerers,
  parseAnswer,
  terminalInteractor,
} from "./interactors.js";
export { type Journal, MemoryJournal } from "./journal.js";
export { refusalOf } from "./launch.js";
export { LEASE_TTL_MS } from "./lease-owner.js";
export { HostMemory } from "./memory.js";
export type { StepStore } from "./persistence.js";
export { type PruneOptions, pruneRuns } from "./prune.js";
export type { PrunedRun, PruneReport } from "./prune-records.js";
export { type ReopenOptions, reopenRun } from "./reopen.js";
export { parseToolRule, rulesGrantPolicy, type ToolRule } from "./rules.js";
export {
  compilePipeline,
  type GrantAnswer,
  type ResumeOptions,
  type RunHandle,
  type RunOptions,
  type RunResult,
  type RunWait,
  resumeRun,
  startRun,
} from "./run.js";
export {
  type ControlOutcome,
  createRunControl,
  type PreparedRun,
  type RunControl,
  type RunControlOptions,
  type RunControlRequest,
} from "./run-control.js";
export { type HistoryStep, type HistoryStore, runHistory } from "./run-history.js";
export type { RunRecord, RunSummary, StoredStatus } from "./run-records.js";
export {
  createStageActor,
  runStage,
  type StageActor,
  type StageMachine,
  stageMachineFor,
} from "./run-stage.js";
export { decideByMode, SECURITY_MODES, type SecurityMode } from "./security-mode.js";
export { createStageServices } from "./stage-services.js";
export type { OwnedSteps, RunStore } from "./store-port.js";
export {
  createTracing,
  type TracingOptions,
  tracingFromEnv,
  tracingWith,
} from "./tracing/otlp.js";
export { runTraceIds, type Tracing } from "./tracing/run-spans.js";
export { MemoryTranscripts, type TranscriptStore, toPrompt } from "./transcripts.js";
