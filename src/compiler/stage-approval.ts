import { and, not, sendTo } from "xstate";
import { capHitActions, staleReport, toolRunActions, userDenial } from "./stage-actions.js";
import {
  callPayload,
  current,
  type Denial,
  grantRequest,
  type StageMachineContext,
} from "./stage-context.js";
import { errorResult, errorView, viewOf } from "./stage-entries.js";
import type { StageMachineSetup } from "./stage-machine-setup.js";

/** The current call, audited as proposed (on entering `proposed`, or on the way past it). */
export const proposalAudit = {
  type: "audit" as const,
  params: ({ context }: { context: StageMachineContext }) => ({
    type: "ToolProposed" as const,
    payload: callPayload(context),
  }),
};

export const envelopeApproval = {
  type: "audit" as const,
  params: ({ context }: { context: StageMachineContext }) => {
    // Written out, not spread: V8 gives an object literal that opens with the spread of a fresh
    // object a map (hidden class) of its own, about 200 bytes an audit event keeps for good.
    const { proposalId, tool, argsDigest, argsSummary } = current(context);
    return {
      type: "ToolApproved" as const,
      payload: { proposalId, tool, argsDigest, argsSummary, source: "envelope" },
    };
  },
};

/**
 * The tool approval order, one proposed call at a time: unknown tools are
 * refused, the envelope approves, anything else asks the pipeline's grant policy and then the
 * interactors (or parks the run), a grant is minted and consumed once, guard rules have the last
 * word, and the result (or the refusal) goes back on the transcript.
 */
export function approvalState(machine: StageMachineSetup) {
  return machine.createStateConfig({
    initial: "next",
    states: {
      next: {
        always: [{ guard: "batchDone", target: "#stage.act.turn" }, { target: "proposed" }],
      },
      proposed: {
        entry: proposalAudit,
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
          // Approved by the envelope, then the guard rules' word (as in `guarded`, one step).
          {
            guard: and(["inEnvelope", "guardDenies"]),
            target: "denied",
            actions: [envelopeApproval, "denyByGuard"],
          },
          { guard: "inEnvelope", target: "running", actions: envelopeApproval },
          {
            target: "policy",
            actions: [
              "startGrantClock",
              {
                type: "audit",
                params: ({ context }) => ({
                  type: "GrantRequested",
                  payload: { ...grantRequest(context) },
                }),
              },
            ],
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
          { guard: "grantTimed", target: "awaitingTimed" },
          { target: "awaitingAnswer" },
        ],
      },
      awaitingAnswer: awaitingAnswer(machine, false),
      awaitingTimed: awaitingAnswer(machine, true),
      // Nobody answered the grant request by its deadline: the grants block's timeout answers.
      timedOut: {
        always: [
          {
            guard: { type: "grantFallbackIs", params: { fallback: "deny" } },
            target: "denied",
            actions: [timedOutAudit("deny"), { type: "deny", params: deadlineDenial }],
          },
          {
            target: "#stage.failed",
            actions: [
              timedOutAudit("fail"),
              {
                type: "failWith",
                params: ({ context }) => {
                  const { tool, proposalId, deadline } = grantRequest(context);
                  return viewOf(
                    "Cancellation/WaitTimedOut",
                    `nobody answered the grant request for ${tool} by its deadline (${deadline})`,
                    { proposalId, deadline },
                  );
                },
              },
            ],
          },
        ],
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
            actions: "denyByGuard",
          },
          { target: "running" },
        ],
      },
      running: {
        entry: sendTo("worker", ({ context }) => ({ type: "RUN_TOOL", context })),
        on: {
          // As `next` would route after the call advances, in the same step.
          TOOL_RAN: [
            staleReport,
            {
              guard: and(["lastCall", "capReached"]),
              target: "#stage.assert",
              actions: [...toolRunActions(), ...capHitActions],
            },
            { guard: "lastCall", target: "#stage.act.calling", actions: toolRunActions() },
            { target: "proposed", actions: toolRunActions() },
          ],
          TOOL_CRASHED: [
            staleReport,
            {
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
          ],
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
  });
}

/**
 * A grant request left to the interactors: asked, or parked until a resume answers. With a
 * deadline (the grants block's timeout) the same states run under a timer kept in context
 * (`deadline`), and a deadline found passed — at the timer, on a resume, or when a late answer
 * comes — takes the timeout's fallback.
 */
function awaitingAnswer(machine: StageMachineSetup, timed: boolean) {
  return machine.createStateConfig({
    tags: ["grant-pending"],
    initial: "routing",
    ...(timed && {
      invoke: {
        src: "waitUntil",
        input: ({ context }: { context: StageMachineContext }) => ({
          until: context.deadline ?? 0,
        }),
        onDone: "#stage.act.dispatch.timedOut",
      },
    }),
    on: {
      GRANT_ANSWER: [
        // An answer after the deadline is too late: the timeout has answered.
        ...(timed
          ? [{ guard: "pastDeadline" as const, target: "#stage.act.dispatch.timedOut" }]
          : []),
        {
          guard: { type: "answersCurrent", params: { decision: "approve" } },
          target: "#stage.act.dispatch.granted",
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
          target: "#stage.act.dispatch.denied",
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
          ...(timed
            ? [{ guard: "pastDeadline" as const, target: "#stage.act.dispatch.timedOut" }]
            : []),
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
  });
}

/** The audit of a grant request nobody answered by its deadline. */
const timedOutAudit = (fallback: "deny" | "fail") => ({
  type: "audit" as const,
  params: ({ context }: { context: StageMachineContext }) => {
    const { proposalId, deadline } = grantRequest(context);
    return {
      type: "WaitTimedOut" as const,
      payload: { kind: "grant", deadline, fallback, proposalId },
    };
  },
});

/** The timeout's denial, heard by the model as a person's would be. */
const deadlineDenial: Denial = {
  source: "deadline",
  code: "ToolTerminal/GrantDenied",
  message:
    "nobody answered this grant request before its deadline, so the call is denied; work with your allowed tools",
};
