import type { StageDefinition } from "../definitions/stage.js";
import type { ErrorCode, ErrorView } from "../errors.js";
import type { JsonValue } from "../tools/types.js";

/** What a stage hands to the transition rules and its successors (DESIGN.md §2). */
export interface StageResult {
  stageId: string;
  stageExecutionId: string;
  verdict: Verdict;
  reason?: string;
  parsed?: JsonValue;
  output?: JsonValue;
  capHit: boolean;
  attemptCount: number;
  /** Why a failed or cancelled stage ended, as the model-free view of the error. */
  error?: ErrorView;
}

export type { ErrorView };

export type Verdict = "ok" | "retry" | "skip" | "fail";
export type GateAnswer = "proceed" | "defer" | "block";
export type GrantDecision = "approve" | "deny";
export type PolicyDecision = GrantDecision | "defer";

/** The ctx a stage sees: the pipeline's fields plus the core-provided ones. Frozen after Setup. */
export type StageContext = Readonly<Record<string, unknown>> & {
  upstream: readonly StageResult[];
  workflowRunId: string;
  stageExecutionId: string;
};

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

/** A `grantStageTool` request (seed 000). */
export interface GrantRequest {
  stageId: string;
  stageExecutionId: string;
  attempt: number;
  proposalId: string;
  tool: string;
  argsDigest: string;
  argsSummary: string;
}

/** One message of a stage's transcript. Transcripts live in the journal, never in context. */
export type TranscriptEntry =
  | { role: "system"; text: string }
  | { role: "user"; text: string }
  | {
      role: "assistant";
      text: string;
      calls: { toolCallId: string; tool: string; args: JsonValue }[];
    }
  | { role: "tool"; toolCallId: string; tool: string; result: JsonValue; isError: boolean };

/** A model turn, already classified by the Act rules (DESIGN.md §4.1). */
export type TurnOutcome = {
  /** What the turn adds to the transcript: the model's reply, then any synthetic answer to it. */
  entries: TranscriptEntry[];
  /** The tools the model called, in order. */
  tools: string[];
  usage: TokenUsage;
} & (
  | { kind: "completion"; parsed: JsonValue }
  | { kind: "completion-invalid"; errors: string[] }
  | { kind: "batch-rejected" }
  | { kind: "text" }
  | { kind: "calls"; calls: ProposedCall[] }
);

export interface TokenUsage {
  inputTokens?: number;
  outputTokens?: number;
}

export interface ToolRun {
  ok: boolean;
  result: JsonValue;
  /** The error code of a failed call. */
  code?: ErrorCode;
  durationMs: number;
}

export interface AssertOutcome {
  verdict: Verdict;
  reason?: string;
}

export interface StageInput {
  stage: StageDefinition;
  runId: string;
  stageExecutionId: string;
  pipelineId?: string;
  /** The pipeline's ctx fields (without the core-provided ones). */
  ctx?: Readonly<Record<string, unknown>>;
  upstream?: readonly StageResult[];
}
