import { assign, fromPromise, not, setup } from "xstate";
import type { StageDefinition } from "../definitions/stage.js";
import { type ErrorView, isStagechartError } from "../errors.js";
import type { JsonValue } from "../tools/types.js";
import { retryDelayMs } from "./backoff.js";
import { consumeGrant, mintGrant } from "./grants.js";
import {
  answeredTurnAudit,
  assertAudit,
  exitAudit,
  failedTurnAudit,
  gateAudit,
  initFailed,
  toolRunActions,
  turnActions,
  userDenial,
} from "./stage-actions.js";
import {
  type AuditParams,
  callPayload,
  current,
  type Denial,
  fail,
  gateInput,
  grantRequest,
  requireStageContext,
  type StageEvent,
  type StageMachineContext,
  stageResult,
} from "./stage-context.js";
import { errorResult, errorView, retryEntry, toolResultEntry, viewOf } from "./stage-entries.js";
import type {
  AssertInput,
  ModelCallInput,
  SetupInput,
  SetupOutput,
  StageServices,
  ToolCallInput,
} from "./stage-services.js";
import type {
  AssertOutcome,
  GateAnswer,
  GrantDecision,
  GrantRequest,
  PolicyDecision,
  StageContext,
  StageInput,
  StageResult,
  ToolRun,
  TurnOutcome,
  Verdict,
} from "./stage-types.js";
import { transcriptKey } from "./transcript-keys.js";

/**
 * The stage lifecycle (DESIGN.md §4.1): Setup → Init → CheckGate → Act → Assert → Exit, one
 * actor per stage execution. All work is done by `services`; the machine only routes, so it
 * can be persisted in any state and restored into a working actor.
 */
export function createStageMachine(services: StageServices) {
  return setup({
    types: {} as {
      context: StageMachineContext;
      events: StageEvent;
      input: StageInput;
      output: StageResult;
    },
    actors: {
      setupStage: fromPromise<SetupOutput, SetupInput>(({ input }) => services.setup(input)),
      initStage: fromPromise<string, { stage: StageDefinition; stageContext: StageContext }>(
        ({ input }) => services.init(input),
      ),
      checkGate: fromPromise<GateAnswer, { stage: StageDefinition; stageContext: StageContext }>(
        ({ input }) => services.checkGate(input),
      ),
      callModel: fromPromise<TurnOutcome, ModelCallInput>(({ input, signal }) =>
        services.callModel(input, signal),
      ),
      askInteractors: fromPromise<GrantDecision, GrantRequest>(({ input, signal }) =>
        services.askInteractors(input, signal),
      ),
      runTool: fromPromise<ToolRun, ToolCallInput>(({ input, signal }) =>
        services.runTool(input, signal),
      ),
      assertStage: fromPromise<AssertOutcome, AssertInput>(({ input }) => services.assert(input)),
      waitUntil: fromPromise<void, { until: number }>(({ input, signal }) =>
        sleep(input.until - services.now(), signal),
      ),
    },
    guards: {
      capReached: ({ context }) => context.turn >= context.stage.turnCap,
      outcomeIs: (_, params: { outcome: TurnOutcome; kind: TurnOutcome["kind"] }) =>
        params.outcome.kind === params.kind,
      gateIs: (_, params: { answer: GateAnswer; expected: GateAnswer }) =>
        params.answer === params.expected,
      gateWaits: ({ context }, params: { answer: GateAnswer }) =>
        params.answer === "defer" && context.stage.resolutionPolicy === "retry-later",
      resolutionIs: ({ context }, params: { policy: StageDefinition["resolutionPolicy"] }) =>
        context.stage.resolutionPolicy === params.policy,
      providerRetryable: ({ context }, params: { error: unknown }) =>
        isStagechartError(params.error) &&
        params.error.class === "ProviderTransient" &&
        context.providerFailures < services.providerRetries.max,
      batchDone: ({ context }) => context.callIndex >= context.batch.length,
      unknownTool: ({ context }) => !services.isKnownTool(current(context).tool),
      inEnvelope: ({ context }) => context.envelope.includes(current(context).tool),
      policyIs: ({ context }, params: { decision: PolicyDecision }) =>
        context.policy === params.decision,
      hasInteractors: () => services.hasInteractors(),
      suspendsUnanswered: () => services.unansweredGrants === "suspend",
      answersCurrent: ({ context, event }, params: { decision?: GrantDecision }) =>
        event.type === "GRANT_ANSWER" &&
        context.batch[context.callIndex]?.proposalId === event.proposalId &&
        (params.decision === undefined || event.decision === params.decision),
      approved: (_, params: { decision: GrantDecision }) => params.decision === "approve",
      grantUsable: ({ context }) => consumeGrant(context.grants, current(context)).ok,
      guardDenies: ({ context }) => services.deniedByGuard(current(context)) !== undefined,
      toolSucceeded: (_, params: { run: ToolRun }) => params.run.ok,
      verdictIs: (_, params: { verdict: Verdict; expected: Verdict[] }) =>
        params.expected.includes(params.verdict),
      retryAllowed: ({ context }, params: { verdict: Verdict }) =>
        params.verdict === "retry" && context.attempt < context.stage.retryPolicy.maxAttempts,
    },
    actions: {
      audit: ({ context }, params: AuditParams) =>
        services.audit({
          type: params.type,
          runId: context.runId,
          stageId: context.stage.id,
          stageExecutionId: context.stageExecutionId,
          attempt: context.attempt,
          payload: params.payload,
        }),
      writeSystemPrompt: ({ context }, params: { text: string }) =>
        services.writeTranscript(
          context.stageExecutionId,
          transcriptKey({ attempt: 0, turn: 0, slot: 0, index: 0 }),
          {
            role: "system",
            text: params.text,
          },
        ),
      writeTurn: ({ context }, params: { outcome: TurnOutcome }) =>
        params.outcome.entries.forEach((entry, index) => {
          const key = transcriptKey({
            attempt: context.attempt,
            turn: context.turn,
            slot: 0,
            index,
          });
          services.writeTranscript(context.stageExecutionId, key, entry);
        }),
      writeCallResult: ({ context }, params: { result: JsonValue; isError: boolean }) => {
        const key = transcriptKey({
          attempt: context.attempt,
          turn: context.turn,
          slot: context.callIndex + 1,
          index: 0,
        });
        services.writeTranscript(
          context.stageExecutionId,
          key,
          toolResultEntry(current(context), params.result, params.isError),
        );
      },
      writeRetryMessage: ({ context }) =>
        services.writeTranscript(
          context.stageExecutionId,
          transcriptKey({ attempt: context.attempt, turn: 0, slot: 0, index: 0 }),
          retryEntry(context.attempt, context.stage.retryPolicy.maxAttempts, context.reason),
        ),
      assignSetup: assign((_, output: SetupOutput) => ({
        stageContext: output.stageContext,
        envelope: output.envelope,
      })),
      recordTurn: assign(({ context }) => ({
        turn: context.turn + 1,
        modelCalls: context.modelCalls + 1,
        providerFailures: 0,
      })),
      recordProviderFailure: assign(({ context }, params: { error: unknown }) => ({
        modelCalls: context.modelCalls + 1,
        providerFailures: context.providerFailures + 1,
        waitUntil:
          services.now() +
          services.providerRetries.delayMs(context.providerFailures + 1, params.error),
      })),
      acceptCompletion: assign((_, params: { outcome: TurnOutcome }) =>
        params.outcome.kind === "completion" ? { parsed: params.outcome.parsed } : {},
      ),
      markCapHit: assign({ capHit: true }),
      proposeBatch: assign((_, params: { outcome: TurnOutcome }) => ({
        batch: params.outcome.kind === "calls" ? params.outcome.calls : [],
        callIndex: 0,
      })),
      advance: assign(({ context }) => ({
        callIndex: context.callIndex + 1,
        policy: undefined,
        denial: undefined,
        grantedBy: undefined,
      })),
      decidePolicy: assign(({ context }) => ({
        policy: services.grantPolicy(grantRequest(context)),
      })),
      grantBy: assign((_, grantedBy: NonNullable<StageMachineContext["grantedBy"]>) => ({
        grantedBy,
      })),
      mintGrant: assign(({ context }) => ({ grants: mintGrant(context.grants, current(context)) })),
      consumeGrant: assign(({ context }) => {
        const consumed = consumeGrant(context.grants, current(context));
        return consumed.ok ? { grants: consumed.value } : {};
      }),
      deny: assign((_, denial: Denial) => ({ denial })),
      setVerdict: assign((_, params: { verdict: Verdict; reason?: string }) => ({
        verdict: params.verdict,
        reason: params.reason,
      })),
      failWith: assign((_, error: ErrorView) => ({
        verdict: "fail" as const,
        error,
        reason: error.message,
      })),
      scheduleRetry: assign(({ context }, params: { reason?: string }) => ({
        reason: params.reason,
        waitUntil: services.now() + retryDelayMs(context.stage.retryPolicy, context.attempt),
      })),
      startNextAttempt: assign(({ context }) => ({
        attempt: context.attempt + 1,
        turn: 0,
        capHit: false,
        parsed: undefined,
      })),
    },
  }).createMachine({
    id: "stage",
    context: ({ input }) => ({
      stage: input.stage,
      runId: input.runId,
      stageExecutionId: input.stageExecutionId,
      ...(input.pipelineId !== undefined && { pipelineId: input.pipelineId }),
      ctx: input.ctx ?? {},
      upstream: input.upstream ?? [],
      envelope: [],
      attempt: 1,
      turn: 0,
      modelCalls: 0,
      modelCallsBefore: input.modelCallsBefore ?? 0,
      batch: [],
      callIndex: 0,
      grants: {},
      providerFailures: 0,
      waitUntil: 0,
      capHit: false,
    }),
    initial: "setup",
    on: { CANCEL: ".cancelled" },
    output: ({ context }) => stageResult(context),
    states: {
      setup: {
        invoke: {
          src: "setupStage",
          input: ({ context }) => ({
            stage: context.stage,
            runId: context.runId,
            stageExecutionId: context.stageExecutionId,
            ctx: context.ctx,
            upstream: context.upstream,
          }),
          onDone: {
            target: "init",
            actions: [
              { type: "assignSetup", params: ({ event }) => event.output },
              {
                type: "audit",
                params: ({ event }) => ({
                  type: "StageSetup",
                  payload: {
                    envelope: event.output.envelope,
                    upstream: event.output.stageContext.upstream.length,
                  },
                }),
              },
            ],
          },
          onError: { target: "failed", actions: initFailed() },
        },
      },
      init: {
        invoke: {
          src: "initStage",
          input: gateInput,
          onDone: {
            target: "checkGate",
            actions: [
              { type: "writeSystemPrompt", params: ({ event }) => ({ text: event.output }) },
              {
                type: "audit",
                params: ({ event }) => ({
                  type: "StageInit",
                  payload: { promptChars: event.output.length },
                }),
              },
            ],
          },
          onError: { target: "failed", actions: initFailed() },
        },
      },
      checkGate: {
        invoke: {
          src: "checkGate",
          input: gateInput,
          onDone: [
            {
              guard: {
                type: "gateIs",
                params: ({ event }) => ({ answer: event.output, expected: "proceed" }),
              },
              target: "act",
              actions: { type: "audit", params: gateAudit("proceed") },
            },
            {
              guard: { type: "gateWaits", params: ({ event }) => ({ answer: event.output }) },
              target: "deferred",
              actions: { type: "audit", params: gateAudit("wait") },
            },
            {
              guard: { type: "resolutionIs", params: { policy: "skip" } },
              target: "done",
              actions: [
                { type: "audit", params: gateAudit("skip") },
                {
                  type: "setVerdict",
                  params: ({ event }) => ({
                    verdict: "skip",
                    reason: `CheckGate answered ${event.output}`,
                  }),
                },
              ],
            },
            {
              target: "failed",
              actions: [
                { type: "audit", params: gateAudit("fail") },
                {
                  type: "failWith",
                  params: ({ event }) =>
                    viewOf("Validation/StageGateRefused", `CheckGate answered ${event.output}`),
                },
              ],
            },
          ],
          onError: { target: "failed", actions: fail(({ event }) => errorView(event.error)) },
        },
      },
      deferred: {
        tags: ["suspended"],
        on: { RECHECK: "checkGate" },
      },
      act: {
        initial: "turn",
        states: {
          turn: {
            always: [
              {
                guard: "capReached",
                target: "#stage.assert",
                actions: [
                  "markCapHit",
                  {
                    type: "audit",
                    params: ({ context }) => ({
                      type: "CapHit",
                      payload: { turnCap: context.stage.turnCap },
                    }),
                  },
                ],
              },
              { target: "calling" },
            ],
          },
          calling: {
            invoke: {
              src: "callModel",
              input: ({ context }) => ({
                stage: context.stage,
                runId: context.runId,
                ...(context.pipelineId !== undefined && { pipelineId: context.pipelineId }),
                stageExecutionId: context.stageExecutionId,
                attempt: context.attempt,
                turn: context.turn + 1,
                modelCalls: context.modelCalls,
                position: context.modelCallsBefore + context.modelCalls,
                envelope: context.envelope,
              }),
              onDone: [
                {
                  guard: {
                    type: "outcomeIs",
                    params: ({ event }) => ({ outcome: event.output, kind: "completion" }),
                  },
                  target: "#stage.assert",
                  actions: [
                    ...turnActions(),
                    {
                      type: "acceptCompletion",
                      params: ({ event }) => ({ outcome: event.output }),
                    },
                  ],
                },
                {
                  guard: {
                    type: "outcomeIs",
                    params: ({ event }) => ({ outcome: event.output, kind: "calls" }),
                  },
                  target: "dispatch",
                  actions: [
                    ...turnActions(),
                    { type: "proposeBatch", params: ({ event }) => ({ outcome: event.output }) },
                  ],
                },
                {
                  target: "turn",
                  actions: [...turnActions(), { type: "audit", params: answeredTurnAudit }],
                },
              ],
              onError: [
                {
                  guard: {
                    type: "providerRetryable",
                    params: ({ event }) => ({ error: event.error }),
                  },
                  target: "providerBackoff",
                  actions: [
                    {
                      type: "recordProviderFailure",
                      params: ({ event }) => ({ error: event.error }),
                    },
                    {
                      type: "audit",
                      params: (args) =>
                        failedTurnAudit(args, Math.max(0, args.context.waitUntil - services.now())),
                    },
                  ],
                },
                {
                  target: "#stage.failed",
                  actions: [
                    { type: "audit", params: failedTurnAudit },
                    fail(({ event }) =>
                      errorView(event.error, "ProviderTransient/ModelCallFailed"),
                    ),
                  ],
                },
              ],
            },
          },
          providerBackoff: {
            invoke: {
              src: "waitUntil",
              input: ({ context }) => ({ until: context.waitUntil }),
              onDone: "calling",
            },
          },
          dispatch: {
            initial: "next",
            states: {
              next: {
                always: [{ guard: "batchDone", target: "#stage.act.turn" }, { target: "proposed" }],
              },
              proposed: {
                entry: {
                  type: "audit",
                  params: ({ context }) => ({
                    type: "ToolProposed",
                    payload: callPayload(context),
                  }),
                },
                always: [
                  {
                    guard: "unknownTool",
                    target: "denied",
                    actions: {
                      type: "deny",
                      params: ({ context }) => ({
                        source: "registry",
                        code: "ToolTerminal/UnknownTool",
                        message: `there is no tool named "${current(context).tool}"; your tools are ${[...context.envelope, context.stage.completionTool].join(", ")}`,
                      }),
                    },
                  },
                  {
                    guard: "inEnvelope",
                    target: "guarded",
                    actions: {
                      type: "audit",
                      params: ({ context }) => ({
                        type: "ToolApproved",
                        payload: { ...callPayload(context), source: "envelope" },
                      }),
                    },
                  },
                  {
                    target: "policy",
                    actions: {
                      type: "audit",
                      params: ({ context }) => ({
                        type: "GrantRequested",
                        payload: { ...grantRequest(context) },
                      }),
                    },
                  },
                ],
              },
              policy: {
                entry: "decidePolicy",
                always: [
                  {
                    guard: { type: "policyIs", params: { decision: "approve" } },
                    target: "granted",
                    actions: { type: "grantBy", params: { source: "policy" } },
                  },
                  {
                    guard: { type: "policyIs", params: { decision: "deny" } },
                    target: "denied",
                    actions: {
                      type: "deny",
                      params: {
                        source: "policy",
                        code: "ToolTerminal/GrantDenied",
                        message: "the pipeline's grant policy denies this call",
                      },
                    },
                  },
                  { target: "awaitingAnswer" },
                ],
              },
              awaitingAnswer: {
                tags: ["grant-pending"],
                initial: "routing",
                on: {
                  GRANT_ANSWER: [
                    {
                      guard: { type: "answersCurrent", params: { decision: "approve" } },
                      target: "granted",
                      actions: {
                        type: "grantBy",
                        params: ({ event }) => ({
                          source: "interactor",
                          ...(event.by !== undefined && { by: event.by }),
                        }),
                      },
                    },
                    {
                      guard: { type: "answersCurrent", params: {} },
                      target: "denied",
                      actions: {
                        type: "deny",
                        params: ({ event }) => ({
                          ...userDenial,
                          ...(event.by !== undefined && { by: event.by }),
                        }),
                      },
                    },
                  ],
                },
                states: {
                  routing: {
                    always: [
                      { guard: "hasInteractors", target: "asking" },
                      { guard: "suspendsUnanswered", target: "parked" },
                      {
                        target: "#stage.act.dispatch.denied",
                        actions: {
                          type: "deny",
                          params: {
                            source: "headless",
                            code: "ToolTerminal/NoInteractor",
                            message:
                              "nobody can approve this call (the run is headless); work with your allowed tools",
                          },
                        },
                      },
                    ],
                  },
                  asking: {
                    invoke: {
                      src: "askInteractors",
                      input: ({ context }) => grantRequest(context),
                      onDone: [
                        {
                          guard: {
                            type: "approved",
                            params: ({ event }) => ({ decision: event.output }),
                          },
                          target: "#stage.act.dispatch.granted",
                          actions: { type: "grantBy", params: { source: "interactor" } },
                        },
                        {
                          target: "#stage.act.dispatch.denied",
                          actions: { type: "deny", params: userDenial },
                        },
                      ],
                      onError: [
                        // Restored after a crash into a host with nobody to ask: route again.
                        { guard: not("hasInteractors"), target: "routing" },
                        {
                          target: "#stage.act.dispatch.denied",
                          actions: {
                            type: "deny",
                            params: ({ event }) => ({
                              ...userDenial,
                              message: `no answer: ${errorView(event.error).message}`,
                            }),
                          },
                        },
                      ],
                    },
                  },
                  // RECHECK (sent when a run resumes) routes the request again: to interactors
                  // the resumed host has, or back here.
                  parked: { tags: ["suspended"], on: { RECHECK: "routing" } },
                },
              },
              granted: {
                entry: [
                  "mintGrant",
                  {
                    type: "audit",
                    params: ({ context }) => ({
                      type: "GrantIssued",
                      payload: { ...callPayload(context), ...context.grantedBy },
                    }),
                  },
                ],
                always: [
                  {
                    guard: "grantUsable",
                    target: "guarded",
                    actions: [
                      "consumeGrant",
                      {
                        type: "audit",
                        params: ({ context }) => ({
                          type: "GrantConsumed",
                          payload: callPayload(context),
                        }),
                      },
                      {
                        type: "audit",
                        params: ({ context }) => ({
                          type: "ToolApproved",
                          payload: {
                            ...callPayload(context),
                            source: context.grantedBy?.source === "policy" ? "policy" : "grant",
                          },
                        }),
                      },
                    ],
                  },
                  {
                    target: "denied",
                    actions: {
                      type: "deny",
                      params: {
                        source: "grant",
                        code: "Validation/GrantAlreadyConsumed",
                        message: "this grant was already used; grants are one-shot",
                      },
                    },
                  },
                ],
              },
              guarded: {
                always: [
                  {
                    guard: "guardDenies",
                    target: "denied",
                    actions: {
                      type: "deny",
                      params: ({ context }) => ({
                        source: "guard",
                        code: "ToolTerminal/GuardDenied",
                        message: `denied by the guard rule ${services.deniedByGuard(current(context))}`,
                      }),
                    },
                  },
                  { target: "running" },
                ],
              },
              running: {
                invoke: {
                  src: "runTool",
                  input: ({ context }) => ({
                    runId: context.runId,
                    stageExecutionId: context.stageExecutionId,
                    call: current(context),
                  }),
                  onDone: [
                    {
                      guard: {
                        type: "toolSucceeded",
                        params: ({ event }) => ({ run: event.output }),
                      },
                      target: "next",
                      actions: toolRunActions("ToolSucceeded"),
                    },
                    { target: "next", actions: toolRunActions("ToolFailed") },
                  ],
                  onError: {
                    target: "next",
                    actions: [
                      {
                        type: "writeCallResult",
                        params: ({ event }) => {
                          const view = errorView(event.error, "ToolTerminal/ToolCrashed");
                          return { result: errorResult(view.code, view.message), isError: true };
                        },
                      },
                      {
                        type: "audit",
                        params: ({ context, event }) => ({
                          type: "ToolFailed",
                          payload: {
                            ...callPayload(context),
                            error: errorView(event.error, "ToolTerminal/ToolCrashed"),
                          },
                        }),
                      },
                      "advance",
                    ],
                  },
                },
              },
              denied: {
                entry: [
                  {
                    type: "writeCallResult",
                    params: ({ context }) => {
                      const { code, message } = context.denial ?? userDenial;
                      const { tool, proposalId } = current(context);
                      return {
                        result: errorResult(code, message, { tool, proposalId, denied: true }),
                        isError: true,
                      };
                    },
                  },
                  {
                    type: "audit",
                    params: ({ context }) => {
                      const { source, code, by } = context.denial ?? userDenial;
                      return {
                        type: "ToolDenied",
                        payload: {
                          ...callPayload(context),
                          source,
                          code,
                          ...(by !== undefined && { by }),
                        },
                      };
                    },
                  },
                  "advance",
                ],
                always: "next",
              },
            },
          },
        },
      },
      assert: {
        invoke: {
          src: "assertStage",
          input: ({ context }) => ({
            stage: context.stage,
            stageContext: requireStageContext(context),
            ...(context.parsed !== undefined && { parsed: context.parsed }),
            capHit: context.capHit,
            attempt: context.attempt,
          }),
          onDone: [
            {
              guard: {
                type: "verdictIs",
                params: ({ event }) => ({
                  verdict: event.output.verdict,
                  expected: ["ok", "skip"],
                }),
              },
              target: "done",
              actions: [
                { type: "audit", params: assertAudit },
                { type: "setVerdict", params: ({ event }) => event.output },
              ],
            },
            {
              guard: {
                type: "retryAllowed",
                params: ({ event }) => ({ verdict: event.output.verdict }),
              },
              target: "retryBackoff",
              actions: [
                { type: "audit", params: assertAudit },
                { type: "scheduleRetry", params: ({ event }) => ({ reason: event.output.reason }) },
                {
                  type: "audit",
                  params: ({ context }) => ({
                    type: "StageRetry",
                    payload: {
                      nextAttempt: context.attempt + 1,
                      maxAttempts: context.stage.retryPolicy.maxAttempts,
                      delayMs: Math.max(0, context.waitUntil - services.now()),
                      reason: context.reason,
                    },
                  }),
                },
              ],
            },
            {
              target: "failed",
              actions: [
                { type: "audit", params: assertAudit },
                {
                  type: "failWith",
                  params: ({ context, event }) =>
                    event.output.verdict === "retry"
                      ? viewOf(
                          "Validation/StageRetriesExhausted",
                          `no attempts left (${context.stage.retryPolicy.maxAttempts}): ${event.output.reason ?? "assert asked for a retry"}`,
                        )
                      : viewOf(
                          "Validation/StageAssertFailed",
                          event.output.reason ?? "assert failed the stage",
                        ),
                },
              ],
            },
          ],
          onError: { target: "failed", actions: fail(({ event }) => errorView(event.error)) },
        },
      },
      retryBackoff: {
        invoke: {
          src: "waitUntil",
          input: ({ context }) => ({ until: context.waitUntil }),
          onDone: { target: "act", actions: ["startNextAttempt", "writeRetryMessage"] },
        },
      },
      done: { type: "final", entry: { type: "audit", params: exitAudit } },
      failed: { type: "final", entry: { type: "audit", params: exitAudit } },
      cancelled: {
        type: "final",
        entry: [
          {
            type: "failWith",
            params: ({ event }) =>
              viewOf(
                "Cancellation/StageCancelled",
                event.type === "CANCEL" && event.reason ? event.reason : "the stage was cancelled",
              ),
          },
          {
            type: "audit",
            params: ({ context }) => ({
              type: "StageCancelled",
              payload: { reason: context.reason },
            }),
          },
        ],
      },
    },
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
