import { withImplementations } from "./machine-cache.js";
import { actState } from "./stage-act.js";
import {
  assertAudit,
  assertedActions,
  enteredActions,
  entryFailedIn,
  exitAudit,
  failedWith,
  gateRoutes,
  initFailed,
  outcomeOf,
} from "./stage-actions.js";
import {
  enterInput,
  fail,
  finishInput,
  gateInput,
  type StageMachineContext,
  stageResult,
} from "./stage-context.js";
import { errorView, viewOf } from "./stage-entries.js";
import { stageMachineSetup } from "./stage-machine-setup.js";
import type { StageEntry, StageFinish } from "./stage-phases.js";
import type { StageServices } from "./stage-services-port.js";
import type { GateAnswer } from "./stage-types.js";

/**
 * The stage lifecycle: Setup → Init → CheckGate → Act → Assert → Exit,
 * one actor per stage execution. Setup, Init and CheckGate run as one actor in `setup`, Assert
 * and Exit as one in `assert` (stage-phases.ts); `checkGate` asks a deferred gate again. All
 * work is done by `services`; the machine only routes, so it can be persisted in any state and
 * restored into a working actor. Its states are compiled once per process; each call gives them
 * `services`.
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
      ...(input.stagesBefore !== undefined && { stagesBefore: input.stagesBefore }),
      envelope: [],
      attempt: 1,
      turn: 0,
      modelCalls: 0,
      modelCallsBefore: input.modelCallsBefore ?? 0,
      ...(input.outputFields !== undefined && { outputFields: input.outputFields }),
      ...(input.override !== undefined && { override: input.override }),
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
          src: "enterStage",
          input: enterInput,
          onDone: [
            {
              guard: { type: "entryFailedIn", params: entryFailedIn("init") },
              target: "failed",
              actions: [...enteredActions, ...initFailed()],
            },
            {
              guard: { type: "entryFailedIn", params: entryFailedIn("gate") },
              target: "failed",
              actions: [...enteredActions, failedWith((entry: StageEntry) => entry.failed?.error)],
            },
            ...gateRoutes((entry: StageEntry) => entry.gate, enteredActions),
          ],
        },
      },
      checkGate: {
        invoke: {
          src: "checkGate",
          input: gateInput,
          onDone: gateRoutes((answer: GateAnswer) => answer),
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
          src: "finishStage",
          input: finishInput,
          onDone: [
            {
              guard: { type: "assertThrew", params: ({ event }) => ({ finish: event.output }) },
              target: "failed",
              actions: failedWith((finish: StageFinish) => finish.failed?.error),
            },
            {
              guard: { type: "exitThrew", params: ({ event }) => ({ finish: event.output }) },
              target: "failed",
              actions: [
                ...assertedActions,
                failedWith((finish: StageFinish) => finish.failed?.error),
              ],
            },
            {
              guard: {
                type: "verdictIs",
                params: ({ event }) => ({
                  verdict: outcomeOf(event.output).verdict,
                  expected: ["ok", "skip"],
                }),
              },
              target: "done",
              actions: [
                ...assertedActions,
                {
                  type: "handOn",
                  params: ({ event }) => ({ output: event.output.exited?.output }),
                },
              ],
            },
            {
              guard: {
                type: "retryAllowed",
                params: ({ event }) => ({ verdict: outcomeOf(event.output).verdict }),
              },
              target: "retryBackoff",
              actions: [
                { type: "audit", params: assertAudit },
                {
                  type: "scheduleRetry",
                  params: ({ event }) => ({ reason: outcomeOf(event.output).reason }),
                },
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
                  params: ({ context, event }) => {
                    const { verdict, reason } = outcomeOf(event.output);
                    const { maxAttempts } = context.stage.retryPolicy;
                    const why = reason ?? "assert asked for a retry";
                    return verdict === "retry"
                      ? viewOf(
                          "Validation/StageRetriesExhausted",
                          `no attempts left (${maxAttempts}): ${why}`,
                        )
                      : viewOf("Validation/StageAssertFailed", reason ?? "assert failed the stage");
                  },
                },
              ],
            },
          ],
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
