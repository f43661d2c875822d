import { not } from "xstate";
import {
  type AuditParams,
  current,
  type Denial,
  type Done,
  type Failed,
  type StageMachineContext,
  stageResult,
} from "./stage-context.js";
import { errorView, viewOf } from "./stage-entries.js";
import type { StageEntry, StageFinish } from "./stage-phases.js";
import type { AssertOutcome, GateAnswer, ToolRun, TurnOutcome } from "./stage-types.js";

/**
 * A report of Act's worker for a call other than the one the state waits for: taken, and nothing
 * done, so that it is never credited to the call waited for.
 */
export const staleReport = { guard: not("answersAwaitedCall") };

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
          ...(event.output.durationMs !== undefined && { durationMs: event.output.durationMs }),
          ...(event.output.model !== undefined && { model: event.output.model }),
          ...(event.output.costUsd !== undefined && { costUsd: event.output.costUsd }),
          ...(event.output.finishReason !== undefined && {
            finishReason: event.output.finishReason,
          }),
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
      }: { context: StageMachineContext } & Done<ToolRun>): AuditParams => {
        // Written out, not spread: see `envelopeApproval`.
        const { proposalId, tool, argsDigest, argsSummary } = current(context);
        return {
          type: event.output.ok ? "ToolSucceeded" : "ToolFailed",
          payload: {
            proposalId,
            tool,
            argsDigest,
            argsSummary,
            durationMs: event.output.durationMs,
            ...(event.output.code !== undefined && { code: event.output.code }),
          },
        };
      },
    },
    { type: "advance" as const },
  ];
}

/** Setup or Init threw: the stage fails, audited as `StageInitFailed`. */
export function initFailed() {
  const view = ({ event }: Done<StageEntry>) => errorView(event.output.failed?.error);
  return [
    { type: "failWith" as const, params: view },
    {
      type: "audit" as const,
      params: (args: Done<StageEntry>): AuditParams => ({
        type: "StageInitFailed",
        payload: { error: view(args) },
      }),
    },
  ];
}

/** The stage fails with the error a phase threw (`errorOf` finds it in the actor's output). */
export const failedWith = <T>(errorOf: (output: T) => unknown) => ({
  type: "failWith" as const,
  params: ({ event }: Done<T>) => errorView(errorOf(event.output)),
});

/** What Setup and Init gave, recorded and audited as each phase would (before the gate's word). */
export const enteredActions = [
  {
    type: "assignSetup" as const,
    params: ({ event }: Done<StageEntry>) => event.output.setup,
  },
  { type: "recordEntry" as const, params: ({ event }: Done<StageEntry>) => event.output },
] as const;

export const entryFailedIn =
  (phase: "init" | "gate") =>
  ({ event }: Done<StageEntry>) => ({ entry: event.output, phase });

/**
 * Where CheckGate's answer leads (after `before`, the phases' own records): on to Act, to wait
 * (a deferred gate that retries later), to a skip, or to a failure.
 */
export function gateRoutes<T, Before extends readonly unknown[] = []>(
  answerOf: (output: T) => GateAnswer | undefined,
  before: Before = [] as unknown as Before,
) {
  const answer = ({ event }: Done<T>) => answerOf(event.output) as GateAnswer;
  const audit = (resolution: string) => ({
    type: "audit" as const,
    params: (args: Done<T>): AuditParams => ({
      type: "CheckGateOutcome",
      payload: { answer: answer(args), resolution },
    }),
  });
  return [
    {
      guard: {
        type: "gateIs" as const,
        params: (args: Done<T>) => ({ answer: answer(args), expected: "proceed" as const }),
      },
      target: "act",
      actions: [...before, audit("proceed")],
    },
    {
      guard: { type: "gateWaits" as const, params: (args: Done<T>) => ({ answer: answer(args) }) },
      target: "deferred",
      actions: [...before, audit("wait")],
    },
    {
      guard: { type: "resolutionIs" as const, params: { policy: "skip" as const } },
      target: "done",
      actions: [
        ...before,
        audit("skip"),
        {
          type: "setVerdict" as const,
          params: (args: Done<T>) => ({
            verdict: "skip" as const,
            reason: `CheckGate answered ${answer(args)}`,
          }),
        },
      ],
    },
    {
      target: "failed",
      actions: [
        ...before,
        audit("fail"),
        {
          type: "failWith" as const,
          params: (args: Done<T>) =>
            viewOf("Validation/StageGateRefused", `CheckGate answered ${answer(args)}`),
        },
      ],
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

/** The verdict a finished Assert and Exit go on with (present once Assert did not throw). */
export const outcomeOf = (finish: StageFinish): AssertOutcome =>
  finish.outcome ?? { verdict: "fail" };

/** Assert's outcome, audited and taken, unless it was decided before a restore. */
export const assertedActions = [
  { type: "audit" as const, params: assertAudit },
  {
    type: "setVerdict" as const,
    params: ({ event }: Done<StageFinish>) => outcomeOf(event.output),
  },
] as const;

export function assertAudit({ event }: Done<StageFinish>): AuditParams | undefined {
  if (!event.output.asserted) return undefined;
  return { type: "StageAssertOutcome", payload: { ...outcomeOf(event.output) } };
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
