export { argsDigest, classifyTurn, type ModelReply } from "./act-rules.js";
export type { InputAnswer, InputRequest } from "./ask-stage.js";
export { retryDelayMs } from "./backoff.js";
export { consumeGrant, type GrantLedger, mintGrant } from "./grants.js";
export { GRAPH_FORMATS, type GraphFormat, renderGraph } from "./graph.js";
export type { PipelineEvent, PipelineOutput, RunStatus } from "./pipeline-context.js";
export { type StageEvent, type StageMachineContext, stageResult } from "./stage-context.js";
export { createStageMachine } from "./stage-machine.js";
export type { StageServices } from "./stage-services-port.js";
export type {
  GrantDecision,
  GrantRequest,
  PolicyDecision,
  ProposedCall,
  StageInput,
  TokenUsage,
  ToolRun,
  TurnOutcome,
} from "./stage-types.js";
