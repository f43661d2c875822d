import type {
  JsonValue,
  OverrideNote,
  StageResult,
  TranscriptEntry,
} from "../definitions/contract.js";
import type { StageDefinition } from "../definitions/stage.js";
import type { ErrorCode } from "../errors.js";

export type {
  AssertOutcome,
  AttemptRecord,
  GateAnswer,
  StageContext,
  StageResult,
  TranscriptEntry,
  Verdict,
} from "../definitions/contract.js";

export type GrantDecision = "approve" | "deny";
export type PolicyDecision = GrantDecision | "defer";

/** One tool call the model proposed, with the identity grants are bound to. */
export interface ProposedCall {
  proposalId: string;
  /** The provider's id for the call, needed to pair the result with it. */
  toolCallId: string;
  tool: string;
  args: JsonValue;
  /** SHA-256 of the key-sorted JSON of the arguments. */
  argsDigest: string;
  argsSummary: string;
}

/** A `grantStageTool` request. */
export interface GrantRequest {
  stageId: string;
  stageExecutionId: string;
  attempt: number;
  proposalId: string;
  tool: string;
  argsDigest: string;
  argsSummary: string;
  /**
   * The tools the stage may call without asking (the requested tool is not one of them); absent
   * for a code or command stage, which has no envelope: the security mode `ask` asks for its calls.
   */
  envelope?: readonly string[];
  /** When nobody answering is taken as the grants block's timeout fallback (ISO time), if it has one. */
  deadline?: string;
}

/** A model turn, already classified by the Act rules. */
export type TurnOutcome = {
  /** What the turn adds to the transcript: the model's reply, then any synthetic answer to it. */
  entries: TranscriptEntry[];
  /** The tools the model called, in order. */
  tools: string[];
  usage: TokenUsage;
  /** How long the model call took in this process, ms (about 0 for a reply the journal held). */
  durationMs?: number;
  /** The model that answered, as specs name it (`openai:gpt-4o`). */
  model?: string;
  /** What the call cost in US dollars, at its model's price; absent when the model has none. */
  costUsd?: number;
  /** Why the model stopped (`stop`, `tool-calls`, `length`, …), as the provider said. */
  finishReason?: string;
} & (
  | { kind: "completion"; parsed: JsonValue }
  | { kind: "completion-invalid"; errors: string[] }
  | { kind: "completion-refused"; reason: string }
  | { kind: "batch-rejected" }
  | { kind: "text" }
  | { kind: "calls"; calls: ProposedCall[] }
);

export interface TokenUsage {
  inputTokens?: number;
  outputTokens?: number;
  /** Of the input tokens, those the provider read from its prompt cache (when it says). */
  cachedInputTokens?: number;
}

export interface ToolRun {
  ok: boolean;
  result: JsonValue;
  /** The error code of a failed call. */
  code?: ErrorCode;
  durationMs: number;
}

export interface StageInput {
  stage: StageDefinition;
  runId: string;
  stageExecutionId: string;
  pipelineId?: string;
  /** The pipeline's ctx fields (without the core-provided ones). */
  ctx?: Readonly<Record<string, unknown>>;
  upstream?: readonly StageResult[];
  /** Stage executions the run entered before this one (`ctx.stagesBefore`); 0 when absent. */
  stagesBefore?: number;
  /** Model calls earlier executions of this stage made in the run (a scripted model's position). */
  modelCallsBefore?: number;
  /** The completion fields Exit hands on as output (all of parsed when absent). */
  outputFields?: readonly string[];
  /** Set when an override entered this stage execution: why, and from where. */
  override?: OverrideNote;
}
