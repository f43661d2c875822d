import { sendTo } from "xstate";
import {
  answeredTurnAudit,
  capHitActions,
  failedTurnAudit,
  staleReport,
  turnActions,
} from "./stage-actions.js";
import { approvalState, envelopeApproval, proposalAudit } from "./stage-approval.js";
import { fail } from "./stage-context.js";
import { errorView } from "./stage-entries.js";
import type { StageMachineSetup } from "./stage-machine-setup.js";

/**
 * Act: model turns until a valid completion or the turn cap; provider errors
 * are retried after a backoff, proposed calls go through the approval order one at a time.
 */
export function actState(machine: StageMachineSetup) {
  return machine.createStateConfig({
    // One actor makes every call of the attempt (see `actWorker`).
    invoke: { id: "worker", src: "actWorker" },
    initial: "turn",
    states: {
      turn: {
        always: [
          { guard: "capReached", target: "#stage.assert", actions: capHitActions },
          { target: "calling" },
        ],
      },
      calling: {
        entry: sendTo("worker", ({ context }) => ({ type: "CALL_MODEL", context })),
        on: {
          MODEL_REPLIED: [
            staleReport,
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
              // The envelope approves the first call and no guard rule denies it: as through
              // `proposed`, audited the same, in one microstep instead of two.
              guard: { type: "envelopeRuns", params: ({ event }) => ({ outcome: event.output }) },
              target: "dispatch.running",
              actions: [...turnActions(), proposalAudit, envelopeApproval],
            },
            {
              guard: {
                type: "outcomeIs",
                params: ({ event }) => ({ outcome: event.output, kind: "calls" }),
              },
              // A batch has a call at least: straight to the approval of its first one.
              target: "dispatch.proposed",
              actions: turnActions(),
            },
            {
              target: "turn",
              actions: [
                ...turnActions(),
                { type: "recordParseError", params: ({ event }) => ({ outcome: event.output }) },
                { type: "audit", params: answeredTurnAudit },
              ],
            },
          ],
          MODEL_FAILED: [
            staleReport,
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
                  type: "auditWait",
                  params: (args) => ({ ...failedTurnAudit(args, 0), waitField: "retryInMs" }),
                },
              ],
            },
            {
              target: "#stage.failed",
              actions: [
                { type: "audit", params: failedTurnAudit },
                fail(({ event }) => errorView(event.error, "ProviderTransient/ModelCallFailed")),
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
      dispatch: approvalState(machine),
    },
  });
}
