import type { ErrorView } from "../errors.js";
import type { JsonValue } from "./json.js";
import type { PipelineMemory } from "./memory.js";
import type { StageDefinition } from "./stage.js";

export { isRecord, type JsonValue } from "./json.js";

/**
 * The vocabulary pipeline authors write against: what stages hand each other, and the shapes
 * of the code (guards, hooks, code stages) a TypeScript pipeline may attach.
 */

export type Verdict = "ok" | "retry" | "skip" | "fail";
export type GateAnswer = "proceed" | "defer" | "block";

/** What a stage hands to the transition rules and its successors. */
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

/**
 * Why an operator moved a run to a stage (OVERRIDE): the stage execution it entered is told,
 * as `ctx.override`; the stage the run was at, when it was at one.
 */
export interface OverrideNote {
  reason: string;
  from?: string;
}

/** The ctx a stage sees: the pipeline's fields plus the core-provided ones. Frozen after Setup. */
export type StageContext = Readonly<Record<string, unknown>> & {
  upstream: readonly StageResult[];
  workflowRunId: string;
  stageExecutionId: string;
  /**
   * How many stage executions the run entered before this one, those of sub-pipelines and
   * repeated stages included (sub-pipeline stages themselves are not counted: their stages are).
   */
  stagesBefore: number;
  /** Set only for the stage execution an override entered. */
  override?: OverrideNote;
};

export interface AssertOutcome {
  verdict: Verdict;
  reason?: string;
}

/**
 * Code a pipeline attaches to an LLM stage: a CheckGate run before Act, an Assert run after it
 * and an Exit that writes the stage's output. Without them the gate always proceeds, Assert is
 * `capHit ? retry : ok` and the output is the parsed completion payload.
 */
/** `P`, or `Default` where `P` is `never` (no schema type is known). */
type Known<P, Default> = [P] extends [never] ? Default : P;

/**
 * `P` is the completion payload's type where the pipeline gives the stage's `completion` as a
 * zod schema (`definePipeline` infers it); `parsed` is typed as it is otherwise.
 */
export interface StageHooks<P = never> {
  gate?(input: {
    stage: StageDefinition;
    ctx: StageContext;
    /** The directory the run's tools work in (`--root`), for gates that look at files. */
    root: string;
  }): GateAnswer | Promise<GateAnswer>;
  assert?(input: AssertHookInput<Known<P, unknown>>): AssertOutcome | Promise<AssertOutcome>;
  /**
   * The reduced summary successors read as `ctx.upstream[i].output` (Exit). Runs
   * once the stage's Assert said `ok` or `skip`; what it returns (JSON) is the output.
   */
  exit?(
    input: ExitHookInput<Known<P, unknown>>,
  ): JsonValue | undefined | Promise<JsonValue | undefined>;
  /**
   * Refuses a completion payload that passed `completionSchema`: the reason goes back to the
   * model as that call's tool result (`Validation/CompletionRefused`) and Act goes on, as after
   * a schema mismatch. Pure: it sees the transcript as the model did, so a resume decides alike.
   */
  refuseCompletion?(input: CompletionCheckInput<Known<P, JsonValue>>): string | undefined;
}

/** What `refuseCompletion` sees: the payload, and the stage execution's transcript before it. */
export interface CompletionCheckInput<P = JsonValue> {
  stage: StageDefinition;
  parsed: P;
  transcript: readonly TranscriptEntry[];
}

/** One attempt of a stage's Act (`ctx.attempts[i]`). */
export interface AttemptRecord {
  /** 1-based. */
  attempt: number;
  /** Model turns the attempt took. */
  turns: number;
  capHit: boolean;
  /** The last completion payload of the attempt that failed `completionSchema`, and why. */
  parseError?: { turn: number; errors: string[] };
  /** What Assert said of a finished attempt (absent on the attempt being asserted). */
  verdict?: Verdict;
  reason?: string;
}

/** What Assert sees (`{parsed, transcript, attempts}`), plus the stage and its ctx. */
export interface AssertHookInput<P = unknown> {
  stage: StageDefinition;
  /** The stage's ctx, with the attempt history as `ctx.attempts`. */
  ctx: StageContext & { attempts: readonly AttemptRecord[] };
  /** The completion payload that passed the schema, when Act ended with one. */
  parsed?: P;
  /** The stage's raw transcript, every attempt so far, read once for this call. */
  transcript: readonly TranscriptEntry[];
  /** Every attempt so far, the current one last (the same list as `ctx.attempts`). */
  attempts: readonly AttemptRecord[];
  /** Whether the current attempt ended on `turnCap`. */
  capHit: boolean;
  /** The current attempt, 1-based. */
  attempt: number;
  /** The directory the run's tools work in (`--root`), for hooks that inspect what a stage wrote. */
  root: string;
}

/** What Exit sees: what Assert saw, and the verdict it gave. */
export interface ExitHookInput<P = unknown> extends AssertHookInput<P> {
  verdict: "ok" | "skip";
  reason?: string;
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

/** What transition rules and guards decide on. */
export interface TransitionFacts {
  verdict: Verdict;
  output?: JsonValue;
  parsed?: JsonValue;
  /** Why a failed stage failed (`error.code`, e.g. `Cancellation/BudgetExceeded`). */
  error?: ErrorView;
  ctx: Readonly<Record<string, unknown>>;
  /** How many times each stage has been entered in this run. */
  visits: Readonly<Record<string, number>>;
}

/**
 * What a pipeline's `onTransition` hook is told after each transition of a run, and once when a
 * run starts or resumes: where the run is now and how it got there.
 */
export interface TransitionNotice {
  runId: string;
  pipelineId: string;
  /** The stage the run is in now (a parallel group's fan-out stage), or its end: `done`, `failed`, `cancelled`. */
  state: string;
  /** Where it was before; absent on the first notice of a start or a resume. */
  previous?: string;
  ctx: Readonly<Record<string, unknown>>;
  /** How many times each stage has been entered so far. */
  visits: Readonly<Record<string, number>>;
  /** The latest result of every stage that has ended. */
  results: Readonly<Record<string, StageResult>>;
  /** The directory the run's tools work in (`--root`). */
  root: string;
}

/**
 * Told after every transition once the step that made it is stored, so what it writes (a state
 * file) never runs ahead of the store; a resume tells it again where the run is. It should be
 * idempotent: a crash between a step and its notice repeats the notice.
 */
export type TransitionHook = (notice: TransitionNotice) => void | Promise<void>;

/** A named guard of a TypeScript pipeline, usable in `when: { guard: name }`. */
export type GuardFunction = (facts: TransitionFacts) => boolean;

/** A tool call made by a code stage: it goes through the host's tools, guards and security mode. */
export type ToolCaller = (tool: string, args: Record<string, unknown>) => Promise<ToolCallResult>;
export type ToolCallResult = { ok: true; output: JsonValue } | { ok: false; error: ErrorView };

/**
 * A stage without an LLM: an async function with the same StageResult contract. `memory` is what
 * the pipeline keeps between runs; a stage run again after a crash may write it again, so its
 * writes should be idempotent. Await its calls: on a shared store (PostgreSQL) they answer later.
 */
export type CodeStageFunction = (input: {
  ctx: StageContext;
  callTool: ToolCaller;
  signal: AbortSignal;
  memory: PipelineMemory;
}) => Promise<CodeStageOutcome> | CodeStageOutcome;

export interface CodeStageOutcome {
  verdict: Verdict;
  reason?: string;
  output?: JsonValue;
}
