import {
  type AuditParams,
  callPayload,
  type Denial,
  type Done,
  type Failed,
  fail,
  type StageMachineContext,
  stageResult,
} from "./stage-context.js";
import { errorView } from "./stage-entries.js";
import type { AssertOutcome, GateAnswer, ToolRun, TurnOutcome } from "./stage-types.js";

export const userDenial: Denial = {
  source: "interactor",
  code: "ToolTerminal/GrantDenied",
  message: "the user denied this call",
};

/** The turn cap is reached: the attempt goes to Assert as it is. */
export const capHitActions = [
  { type: "markCapHit" as const },
  {
    type: "audit" as const,
    params: ({ context }: { context: StageMachineContext }): AuditParams => ({
      type: "CapHit",
      payload: { turnCap: context.stage.turnCap },
    }),
  },
];

export function turnActions() {
  return [
    {
      type: "recordTurn" as const,
      params: ({ event }: Done<TurnOutcome>) => ({ outcome: event.output }),
    },
    {
      type: "writeTurn" as const,
      params: ({ event }: Done<TurnOutcome>) => ({ outcome: event.output }),
    },
    {
      type: "audit" as const,
      params: ({
        context,
        event,
      }: { context: StageMachineContext } & Done<TurnOutcome>): AuditParams => ({
        type: "ModelTurn",
        payload: {
          turn: context.turn,
          outcome: event.output.kind,
          tools: event.output.tools,
          usage: event.output.usage,
        },
      }),
    },
  ];
}

/** A tool ran (and succeeded or failed): its result goes on the transcript, then the next call. */
export function toolRunActions() {
  return [
    {
      type: "writeCallResult" as const,
      params: ({ event }: Done<ToolRun>) => ({
        result: event.output.result,
        isError: !event.output.ok,
      }),
    },
    {
      type: "audit" as const,
      params: ({
        context,
        event,
      }: { context: StageMachineContext } & Done<ToolRun>): AuditParams => ({
        type: event.output.ok ? "ToolSucceeded" : "ToolFailed",
        payload: {
          ...callPayload(context),
          durationMs: event.output.durationMs,
          ...(event.output.code !== undefined && { code: event.output.code }),
        },
      }),
    },
    { type: "advance" as const },
  ];
}

export function initFailed() {
  return [
    fail(({ event }) => errorView(event.error)),
    {
      type: "audit" as const,
      params: ({ event }: Failed): AuditParams => ({
        type: "StageInitFailed",
        payload: { error: errorView(event.error) },
      }),
    },
  ];
}

export function answeredTurnAudit({
  context,
  event,
}: { context: StageMachineContext } & Done<TurnOutcome>): AuditParams {
  const outcome = event.output;
  if (outcome.kind === "text")
    return { type: "Steered", payload: { completionTool: context.stage.completionTool } };
  return {
    type: "CompletionRejected",
    payload:
      outcome.kind === "completion-invalid"
        ? { reason: "schema", errors: outcome.errors }
        : outcome.kind === "completion-refused"
          ? { reason: "refused", message: outcome.reason }
          : { reason: "batch", tools: outcome.tools },
  };
}

export function gateAudit(resolution: string) {
  return ({ event }: Done<GateAnswer>): AuditParams => ({
    type: "CheckGateOutcome",
    payload: { answer: event.output, resolution },
  });
}

export function assertAudit({ event }: Done<AssertOutcome>): AuditParams {
  return { type: "StageAssertOutcome", payload: { ...event.output } };
}

/** A turn whose model call failed; `retryInMs` when the stage will try again after a wait. */
export function failedTurnAudit(
  { context, event }: { context: StageMachineContext } & Failed,
  retryInMs?: number,
): AuditParams {
  return {
    type: "ModelTurn",
    payload: {
      turn: context.turn + 1,
      outcome: "error",
      error: errorView(event.error),
      ...(retryInMs !== undefined && { retryInMs }),
    },
  };
}

export function exitAudit({ context }: { context: StageMachineContext }): AuditParams {
  const { verdict, reason, capHit, attemptCount, error } = stageResult(context);
  return {
    type: "StageExited",
    payload: { verdict, reason, capHit, attemptCount, ...(error && { error }) },
  };
}
