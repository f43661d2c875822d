import type { OverrideNote } from "../definitions/contract.js";
import type { StageDefinition } from "../definitions/stage.js";
import type { ErrorCode, ErrorView } from "../errors.js";
import type { AuditEventType } from "../events/audit.js";
import type { JsonValue } from "../tools/types.js";
import type { AskContext, InputRequest } from "./ask-stage.js";
import { deadlineIso } from "./deadline.js";
import type { GrantLedger } from "./grants.js";
import type { EnterInput, FinishInput } from "./stage-phases.js";
import type { AssertInput, ModelCallInput, ToolCallInput } from "./stage-services-port.js";
import type {
  AttemptRecord,
  GrantDecision,
  GrantRequest,
  PolicyDecision,
  ProposedCall,
  StageContext,
  StageResult,
  ToolRun,
  TurnOutcome,
  Verdict,
} from "./stage-types.js";

/** Everything a stage execution needs to continue after a restore: small, and flat over time. */
export interface StageMachineContext {
  stage: StageDefinition;
  runId: string;
  stageExecutionId: string;
  pipelineId?: string;
  ctx: Readonly<Record<string, unknown>>;
  upstream: readonly StageResult[];
  /** Absent from snapshots stored before it was kept. */
  stagesBefore?: number;
  stageContext?: StageContext;
  envelope: string[];
  attempt: number;
  /** Turns taken in the current attempt. */
  turn: number;
  modelCalls: number;
  modelCallsBefore: number;
  /** The calls of the current turn, dispatched one at a time. */
  batch: ProposedCall[];
  callIndex: number;
  grants: GrantLedger;
  policy?: PolicyDecision;
  /** Who approved the current out-of-envelope call. */
  grantedBy?: { source: "policy" | "interactor"; by?: string };
  /** Why the current call is refused, set on the way into `denied`. */
  denial?: Denial;
  providerFailures: number;
  /** A backoff deadline (epoch ms), kept in context so a restored stage waits only the rest. */
  waitUntil: number;
  /**
   * The current grant request's deadline (epoch ms), when the pipeline's grants block sets a
   * timeout: kept in context, as `waitUntil` is, so a restored request waits only the rest.
   */
  deadline?: number;
  parsed?: JsonValue;
  capHit: boolean;
  /** The last schema-rejected completion of the current attempt. */
  parseError?: AttemptRecord["parseError"];
  /** The attempts Assert sent back for a retry, oldest first (absent before the first retry). */
  attempts?: AttemptRecord[];
  /** The completion fields Exit hands on as output (all of parsed when absent). */
  outputFields?: readonly string[];
  /** Why an override entered this stage execution, for its ctx and its system prompt. */
  override?: OverrideNote;
  /** What Exit handed on, once it ran. */
  exited?: { output?: JsonValue };
  verdict?: Verdict;
  reason?: string;
  error?: ErrorView;
}

export interface Denial {
  source: "registry" | "policy" | "interactor" | "headless" | "grant" | "guard" | "deadline";
  code: ErrorCode;
  message: string;
  by?: string;
}

export type StageEvent =
  | { type: "CANCEL"; reason?: string }
  | { type: "GRANT_ANSWER"; proposalId: string; decision: GrantDecision; by?: string }
  | { type: "RECHECK" }
  | ActReport;

/**
 * What Act's worker (`actWorker`) reports of the calls it was told to make, each tagged with the
 * call it answers (the model call's number in its attempt, the tool call's proposal id): the
 * stage takes only the report of the call its state waits for.
 */
export type ActReport =
  | { type: "MODEL_REPLIED"; modelCalls: number; output: TurnOutcome }
  | { type: "MODEL_FAILED"; modelCalls: number; error: unknown }
  | { type: "TOOL_RAN"; proposalId: string; output: ToolRun }
  | { type: "TOOL_CRASHED"; proposalId: string; error: unknown };

/**
 * The calls Act's worker is told to make, one at a time, with the stage's context they are read
 * from: the worker reads each call's input as it makes the call, so that a throw there is the
 * call's failure.
 */
export type ActCommand =
  | { type: "CALL_MODEL"; context: StageMachineContext }
  | { type: "RUN_TOOL"; context: StageMachineContext };

export interface AuditParams {
  type: AuditEventType;
  payload: Record<string, unknown>;
}

/** An actor's done event, or the worker's report of a call: what a call gave. */
export type Done<T> = { event: { output: T } };
/** An actor's error event, or the worker's report of a call that threw. */
export type Failed = { event: { error: unknown } };

export function current(context: StageMachineContext): ProposedCall {
  const call = context.batch[context.callIndex];
  if (!call) throw new Error(`no call ${context.callIndex} in the current batch`);
  return call;
}

export function callPayload(
  context: StageMachineContext,
): Pick<GrantRequest, "proposalId" | "tool" | "argsDigest" | "argsSummary"> {
  const { proposalId, tool, argsDigest, argsSummary } = current(context);
  return { proposalId, tool, argsDigest, argsSummary };
}

export function grantRequest(context: StageMachineContext): GrantRequest {
  return {
    stageId: context.stage.id,
    stageExecutionId: context.stageExecutionId,
    attempt: context.attempt,
    ...callPayload(context),
    envelope: context.envelope,
    ...(context.deadline !== undefined && { deadline: deadlineIso(context.deadline) }),
  };
}

export function requireStageContext(context: StageMachineContext): StageContext {
  if (!context.stageContext) throw new Error("the stage context is built in Setup");
  return context.stageContext;
}

/** What a parked stage waits for: an answer to its grant request, or a gate to be checked again. */
export type StageWait =
  | { kind: "grant"; request: GrantRequest }
  | { kind: "ask"; request: InputRequest }
  | { kind: "gate"; stageId: string; stageExecutionId: string };

/**
 * What a stage waits for: a grant request being asked or parked (tag `grant-pending`), or a
 * deferred gate. Only stage machines carry these tags, so any snapshot can be asked. A stage
 * tagged `suspended` on top waits for nothing but an answer from outside.
 */
export function stageWait(snapshot: {
  hasTag(tag: string): boolean;
  context: unknown;
}): StageWait | undefined {
  if (snapshot.hasTag("ask-pending"))
    return { kind: "ask", request: (snapshot.context as AskContext).request };
  const context = snapshot.context as StageMachineContext;
  if (snapshot.hasTag("grant-pending")) return { kind: "grant", request: grantRequest(context) };
  if (!snapshot.hasTag("suspended")) return undefined;
  return { kind: "gate", stageId: context.stage.id, stageExecutionId: context.stageExecutionId };
}

/** The current attempt as Assert sees it. */
export function currentAttempt(context: StageMachineContext): AttemptRecord {
  return {
    attempt: context.attempt,
    turns: context.turn,
    capHit: context.capHit,
    ...(context.parseError !== undefined && { parseError: context.parseError }),
  };
}

/** Every attempt so far, the current one last (`ctx.attempts`). */
export function attemptHistory(context: StageMachineContext): AttemptRecord[] {
  return [...(context.attempts ?? []), currentAttempt(context)];
}

export function stageResult(context: StageMachineContext): StageResult {
  // A stage that did not pass through Exit hands on its payload as it is.
  const output = context.exited ? context.exited.output : context.parsed;
  return {
    stageId: context.stage.id,
    stageExecutionId: context.stageExecutionId,
    verdict: context.verdict ?? "fail",
    ...(context.reason !== undefined && { reason: context.reason }),
    ...(context.parsed !== undefined && { parsed: context.parsed }),
    ...(output !== undefined && { output }),
    capHit: context.capHit,
    attemptCount: context.attempt,
    modelCalls: context.modelCalls,
    ...(context.error !== undefined && { error: context.error }),
  };
}

export const assertInput = ({ context }: { context: StageMachineContext }): AssertInput => ({
  stage: context.stage,
  stageContext: requireStageContext(context),
  ...(context.parsed !== undefined && { parsed: context.parsed }),
  capHit: context.capHit,
  attempt: context.attempt,
  attempts: attemptHistory(context),
});

export const enterInput = ({ context }: { context: StageMachineContext }): EnterInput => ({
  stage: context.stage,
  runId: context.runId,
  stageExecutionId: context.stageExecutionId,
  ctx: context.ctx,
  upstream: context.upstream,
  ...(context.stagesBefore !== undefined && { stagesBefore: context.stagesBefore }),
  ...(context.override !== undefined && { override: context.override }),
});

/** Exit runs after an Assert that said `ok` or `skip`, handing on these fields. */
export const finishInput = ({ context }: { context: StageMachineContext }): FinishInput => ({
  ...assertInput({ context }),
  ...(context.outputFields !== undefined && { outputFields: context.outputFields }),
});

export const gateInput = ({ context }: { context: StageMachineContext }) => ({
  stage: context.stage,
  stageContext: requireStageContext(context),
});

export const fail = (view: (args: Failed) => ErrorView) => ({
  type: "failWith" as const,
  params: view,
});

/** The proposal id of the tool call a stage in `running` waits for ("" when there is none). */
export const awaitedProposal = (context: StageMachineContext): string =>
  context.batch[context.callIndex]?.proposalId ?? "";

/** Whether a report of Act's worker answers the call the stage waits for, not an earlier one. */
export const answersAwaitedCall = (context: StageMachineContext, report: ActReport): boolean =>
  report.type === "MODEL_REPLIED" || report.type === "MODEL_FAILED"
    ? report.modelCalls === context.modelCalls
    : report.proposalId === awaitedProposal(context);

/** The model call of the turn about to be taken. */
export const modelCallInput = ({ context }: { context: StageMachineContext }): ModelCallInput => ({
  stage: context.stage,
  runId: context.runId,
  ...(context.pipelineId !== undefined && { pipelineId: context.pipelineId }),
  stageExecutionId: context.stageExecutionId,
  attempt: context.attempt,
  turn: context.turn + 1,
  modelCalls: context.modelCalls,
  position: context.modelCallsBefore + context.modelCalls,
  envelope: context.envelope,
});

/** The run of the current call, once approved. */
export const toolCallInput = ({ context }: { context: StageMachineContext }): ToolCallInput => ({
  runId: context.runId,
  stageExecutionId: context.stageExecutionId,
  call: current(context),
});
