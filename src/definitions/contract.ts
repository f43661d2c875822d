import type { ErrorView } from "../errors.js";
import type { StageDefinition } from "./stage.js";

/**
 * The vocabulary pipeline authors write against: what stages hand each other, and the shapes
 * of the code (guards, hooks, code stages) a TypeScript pipeline may attach.
 */

/** Plain JSON: what crosses a stage boundary and what a tool hands back to a model. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

export type Verdict = "ok" | "retry" | "skip" | "fail";
export type GateAnswer = "proceed" | "defer" | "block";

/** What a stage hands to the transition rules and its successors (DESIGN.md §2). */
export interface StageResult {
  stageId: string;
  stageExecutionId: string;
  verdict: Verdict;
  reason?: string;
  parsed?: JsonValue;
  /** The stage's reduced summary for its successors; by default the parsed completion payload. */
  output?: JsonValue;
  capHit: boolean;
  attemptCount: number;
  /** Model calls the stage execution made, failed ones included. */
  modelCalls?: number;
  /** Why a failed or cancelled stage ended. */
  error?: ErrorView;
}

/** The ctx a stage sees: the pipeline's fields plus the core-provided ones. Frozen after Setup. */
export type StageContext = Readonly<Record<string, unknown>> & {
  upstream: readonly StageResult[];
  workflowRunId: string;
  stageExecutionId: string;
};

export interface AssertOutcome {
  verdict: Verdict;
  reason?: string;
}

/**
 * Code a pipeline attaches to an LLM stage: a CheckGate run before Act, and an Assert run
 * after it. Without them the gate always proceeds and Assert is `capHit ? retry : ok`.
 */
export interface StageHooks {
  gate?(input: { stage: StageDefinition; ctx: StageContext }): GateAnswer | Promise<GateAnswer>;
  assert?(input: AssertHookInput): AssertOutcome | Promise<AssertOutcome>;
}

export interface AssertHookInput {
  stage: StageDefinition;
  ctx: StageContext;
  /** The completion payload that passed the schema, when Act ended with one. */
  parsed?: unknown;
  capHit: boolean;
  attempt: number;
}

/** What transition rules and guards decide on. */
export interface TransitionFacts {
  verdict: Verdict;
  output?: JsonValue;
  parsed?: JsonValue;
  ctx: Readonly<Record<string, unknown>>;
  /** How many times each stage has been entered in this run. */
  visits: Readonly<Record<string, number>>;
}

/** A named guard of a TypeScript pipeline, usable in `when: { guard: name }`. */
export type GuardFunction = (facts: TransitionFacts) => boolean;

/** A tool call made by a code stage: it goes through the host's tools, guards and security mode. */
export type ToolCaller = (tool: string, args: Record<string, unknown>) => Promise<ToolCallResult>;
export type ToolCallResult = { ok: true; output: JsonValue } | { ok: false; error: ErrorView };

/** A stage without an LLM: an async function with the same StageResult contract. */
export type CodeStageFunction = (input: {
  ctx: StageContext;
  callTool: ToolCaller;
  signal: AbortSignal;
}) => Promise<CodeStageOutcome> | CodeStageOutcome;

export interface CodeStageOutcome {
  verdict: Verdict;
  reason?: string;
  output?: JsonValue;
}
