import { withImplementations } from "./machine-cache.js";
import { actState } from "./stage-act.js";
import { assertAudit, exitAudit, gateAudit, initFailed } from "./stage-actions.js";
import {
  assertInput,
  exitInput,
  fail,
  gateInput,
  type StageMachineContext,
  stageResult,
} from "./stage-context.js";
import { errorView, viewOf } from "./stage-entries.js";
import { stageMachineSetup } from "./stage-machine-setup.js";
import type { StageServices } from "./stage-services.js";

/**
 * The stage lifecycle (DESIGN.md §4.1): Setup → Init → CheckGate → Act → Assert → Exit, one
 * actor per stage execution. All work is done by `services`; the machine only routes, so it
 * can be persisted in any state and restored into a working actor. Its states are compiled once
 * per process; each call gives them `services`.
 */
export function createStageMachine(services: StageServices): StageMachine {
  compiled ??= compileStageMachine();
  // An empty machine of the stage setup carries its implementations for these services.
  const { implementations } = stageMachineSetup(services).createMachine({
    context: {} as StageMachineContext,
  });
  return withImplementations(compiled, implementations);
}

export type StageMachine = ReturnType<typeof compileStageMachine>;

let compiled: StageMachine | undefined;

/** What the compiled states run with until a caller gives its own services: nothing. */
const NOT_BOUND = {} as StageServices;

function compileStageMachine() {
  const machine = stageMachineSetup(NOT_BOUND);
  return machine.createMachine({
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
      ...(input.outputFields !== undefined && { outputFields: input.outputFields }),
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
      act: actState(machine),
      assert: {
        invoke: {
          src: "assertStage",
          input: assertInput,
          onDone: [
            {
              guard: {
                type: "verdictIs",
                params: ({ event }) => ({
                  verdict: event.output.verdict,
                  expected: ["ok", "skip"],
                }),
              },
              target: "exit",
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
                  type: "auditWait",
                  params: ({ context }) => ({
                    type: "StageRetry",
                    payload: {
                      nextAttempt: context.attempt + 1,
                      maxAttempts: context.stage.retryPolicy.maxAttempts,
                      delayMs: 0,
                      reason: context.reason,
                    },
                    waitField: "delayMs",
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
      exit: {
        invoke: {
          src: "exitStage",
          input: exitInput,
          onDone: {
            target: "done",
            actions: { type: "handOn", params: ({ event }) => ({ output: event.output }) },
          },
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
