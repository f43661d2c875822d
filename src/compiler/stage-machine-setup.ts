import { type AnyActorRef, assign, fromCallback, fromPromise, setup } from "xstate";
import type { StageDefinition } from "../definitions/stage.js";
import { type ErrorView, isStagechartError } from "../errors.js";
import type { JsonValue } from "../tools/types.js";
import { retryDelayMs } from "./backoff.js";
import { deadlineOf, sleepUntil } from "./deadline.js";
import { consumeGrant, mintGrant } from "./grants.js";
import {
  type ActCommand,
  type ActReport,
  type AuditParams,
  answersAwaitedCall,
  awaitedProposal,
  current,
  currentAttempt,
  type Denial,
  grantRequest,
  modelCallInput,
  type StageEvent,
  type StageMachineContext,
  toolCallInput,
} from "./stage-context.js";
import { openingEntry, retryEntry, toolResultEntry } from "./stage-entries.js";
import {
  type EnterInput,
  enterStage,
  type FinishInput,
  finishStage,
  type StageEntry,
  type StageFinish,
} from "./stage-phases.js";
import type { SetupOutput, StageServices } from "./stage-services-port.js";
import { withSlot } from "./stage-slots.js";
import type {
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
 * The stage machine's vocabulary: the actors that do the work (all through `services`), the
 * guards that route and the actions that record. The states are in stage-machine.ts (the
 * lifecycle), stage-act.ts (the Act loop) and stage-approval.ts (the tool approval order).
 */
export function stageMachineSetup(services: StageServices) {
  return setup({
    types: {} as {
      context: StageMachineContext;
      events: StageEvent;
      input: StageInput;
      output: StageResult;
    },
    actors: {
      // Setup, a gate checked again and Assert are work: each waits for the stage's slot.
      enterStage: fromPromise<StageEntry, EnterInput>(({ input, self }) =>
        withSlot(services.slots, input.stageExecutionId, self._parent, () =>
          enterStage(services, input),
        ),
      ),
      checkGate: fromPromise<GateAnswer, { stage: StageDefinition; stageContext: StageContext }>(
        ({ input, self }) =>
          withSlot(services.slots, input.stageContext.stageExecutionId, self._parent, () =>
            services.checkGate(input),
          ),
      ),
      actWorker: fromCallback<ActCommand, undefined, ActReport>(({ self, sendBack, receive }) =>
        actWorker(services, self, sendBack, receive),
      ),
      askInteractors: fromPromise<GrantDecision, GrantRequest>(({ input, signal }) =>
        services.askInteractors(input, signal),
      ),
      finishStage: fromPromise<StageFinish, FinishInput>(({ input, self }) =>
        withSlot(services.slots, input.stageContext.stageExecutionId, self._parent, () =>
          finishStage(services, input),
        ),
      ),
      waitUntil: fromPromise<void, { until: number }>(({ input, signal }) =>
        sleepUntil(input.until, () => services.now(), signal),
      ),
    },
    guards: {
      capReached: ({ context }) => context.turn >= context.stage.turnCap,
      answersAwaitedCall: ({ context, event }) => answersAwaitedCall(context, event as ActReport),
      outcomeIs: (_, params: { outcome: TurnOutcome; kind: TurnOutcome["kind"] }) =>
        params.outcome.kind === params.kind,
      entryFailedIn: (_, params: { entry: StageEntry; phase: "init" | "gate" }) =>
        params.entry.failed?.phase === params.phase,
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
      /** The current call is the batch's last (checked before it advances). */
      lastCall: ({ context }) => context.callIndex + 1 >= context.batch.length,
      unknownTool: ({ context }) => !services.isKnownTool(current(context).tool),
      inEnvelope: ({ context }) => context.envelope.includes(current(context).tool),
      /** A turn's first call, which the envelope approves and no guard rule denies. */
      envelopeRuns: ({ context }, params: { outcome: TurnOutcome }) => {
        const call = params.outcome.kind === "calls" ? params.outcome.calls[0] : undefined;
        return (
          call !== undefined &&
          services.isKnownTool(call.tool) &&
          context.envelope.includes(call.tool) &&
          services.deniedByGuard(call) === undefined
        );
      },
      policyIs: ({ context }, params: { decision: PolicyDecision }) =>
        context.policy === params.decision,
      hasInteractors: () => services.hasInteractors(),
      suspendsUnanswered: () => services.unansweredGrants === "suspend",
      grantTimed: ({ context }) => context.deadline !== undefined,
      pastDeadline: ({ context }) =>
        context.deadline !== undefined && services.now() >= context.deadline,
      grantFallbackIs: (_, params: { fallback: "deny" | "fail" }) =>
        services.grantTimeout?.fallback === params.fallback,
      answersCurrent: ({ context, event }, params: { decision?: GrantDecision }) =>
        event.type === "GRANT_ANSWER" &&
        context.batch[context.callIndex]?.proposalId === event.proposalId &&
        (params.decision === undefined || event.decision === params.decision),
      approved: (_, params: { decision: GrantDecision }) => params.decision === "approve",
      grantUsable: ({ context }) => consumeGrant(context.grants, current(context)).ok,
      guardDenies: ({ context }) => services.deniedByGuard(current(context)) !== undefined,
      verdictIs: (_, params: { verdict: Verdict; expected: Verdict[] }) =>
        params.expected.includes(params.verdict),
      assertThrew: (_, params: { finish: StageFinish }) => params.finish.outcome === undefined,
      exitThrew: (_, params: { finish: StageFinish }) => params.finish.failed !== undefined,
      retryAllowed: ({ context }, params: { verdict: Verdict }) =>
        params.verdict === "retry" && context.attempt < context.stage.retryPolicy.maxAttempts,
    },
    actions: {
      /** Emits the event; nothing when `params` is undefined (a phase that did not run now). */
      audit: ({ context }, params: AuditParams | undefined) =>
        params &&
        services.audit({
          type: params.type,
          runId: context.runId,
          stageId: context.stage.id,
          stageExecutionId: context.stageExecutionId,
          attempt: context.attempt,
          payload: params.payload,
        }),
      /** Audits how long the stage now waits (until `waitUntil`) as the payload's `waitField`. */
      auditWait: ({ context }, params: AuditParams & { waitField: string }) =>
        services.audit({
          type: params.type,
          runId: context.runId,
          stageId: context.stage.id,
          stageExecutionId: context.stageExecutionId,
          attempt: context.attempt,
          payload: {
            ...params.payload,
            [params.waitField]: Math.max(0, context.waitUntil - services.now()),
          },
        }),
      /** Setup's and Init's records: their audit events, and Init's system prompt and opening turn. */
      recordEntry: ({ context }, entry: StageEntry) => {
        const record = (
          type: AuditParams["type"],
          payload: Record<string, unknown>,
          endedAt: number | undefined,
        ) =>
          services.audit({
            type,
            runId: context.runId,
            stageId: context.stage.id,
            stageExecutionId: context.stageExecutionId,
            attempt: context.attempt,
            payload,
            ...(endedAt !== undefined && { at: new Date(endedAt).toISOString() }),
          });
        if (entry.setup)
          record(
            "StageSetup",
            {
              envelope: entry.setup.envelope,
              upstream: entry.setup.stageContext.upstream.length,
            },
            entry.endedAt.setup,
          );
        if (entry.prompt === undefined) return;
        services.writeTranscript(
          context.runId,
          context.stageExecutionId,
          transcriptKey({ attempt: 0, turn: 0, slot: 0, index: 0 }),
          { role: "system", text: entry.prompt },
        );
        services.writeTranscript(
          context.runId,
          context.stageExecutionId,
          transcriptKey({ attempt: 0, turn: 0, slot: 0, index: 1 }),
          openingEntry(context.stage),
        );
        record("StageInit", { promptChars: entry.prompt.length }, entry.endedAt.init);
      },
      writeTurn: ({ context }, params: { outcome: TurnOutcome }) =>
        params.outcome.entries.forEach((entry, index) => {
          const key = transcriptKey({
            attempt: context.attempt,
            turn: context.turn,
            slot: 0,
            index,
          });
          services.writeTranscript(context.runId, context.stageExecutionId, key, entry);
        }),
      writeCallResult: ({ context }, params: { result: JsonValue; isError: boolean }) => {
        const key = transcriptKey({
          attempt: context.attempt,
          turn: context.turn,
          slot: context.callIndex + 1,
          index: 0,
        });
        services.writeTranscript(
          context.runId,
          context.stageExecutionId,
          key,
          toolResultEntry(current(context), params.result, params.isError),
        );
      },
      writeRetryMessage: ({ context }) =>
        services.writeTranscript(
          context.runId,
          context.stageExecutionId,
          transcriptKey({ attempt: context.attempt, turn: 0, slot: 0, index: 0 }),
          retryEntry(context.attempt, context.stage.retryPolicy.maxAttempts, context.reason),
        ),
      assignSetup: assign((_, output: SetupOutput | undefined) =>
        output ? { stageContext: output.stageContext, envelope: output.envelope } : {},
      ),
      /** A model turn answered; a batch of calls is proposed, its first call current. */
      recordTurn: assign(({ context }, params: { outcome: TurnOutcome }) => ({
        turn: context.turn + 1,
        modelCalls: context.modelCalls + 1,
        providerFailures: 0,
        ...(params.outcome.kind === "calls" && { batch: params.outcome.calls, callIndex: 0 }),
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
      recordParseError: assign(({ context }, params: { outcome: TurnOutcome }) =>
        params.outcome.kind === "completion-invalid"
          ? { parseError: { turn: context.turn, errors: params.outcome.errors } }
          : {},
      ),
      markCapHit: assign({ capHit: true }),
      advance: assign(({ context }) => ({ callIndex: context.callIndex + 1, ...cleared(context) })),
      /** A grant request's deadline, when the pipeline's grants block sets a timeout. */
      startGrantClock: assign(() =>
        services.grantTimeout
          ? { deadline: deadlineOf(services.now(), services.grantTimeout) }
          : {},
      ),
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
      denyByGuard: assign(({ context }) => ({
        denial: {
          source: "guard" as const,
          code: "ToolTerminal/GuardDenied" as const,
          message: `denied by the guard rule ${services.deniedByGuard(current(context))}`,
        },
      })),
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
        attempts: [
          ...(context.attempts ?? []),
          {
            ...currentAttempt(context),
            verdict: "retry" as const,
            ...(params.reason !== undefined && { reason: params.reason }),
          },
        ],
        waitUntil: services.now() + retryDelayMs(context.stage.retryPolicy, context.attempt),
      })),
      startNextAttempt: assign(({ context }) => ({
        attempt: context.attempt + 1,
        turn: 0,
        capHit: false,
        parsed: undefined,
        parseError: undefined,
      })),
      handOn: assign((_, params: { output: JsonValue | undefined }) => ({
        exited: params.output === undefined ? {} : { output: params.output },
      })),
    },
  });
}

export type StageMachineSetup = ReturnType<typeof stageMachineSetup>;

/**
 * The current call's decisions, cleared, touching only the keys that are set: XState copies
 * every key of the context at each assign (`Object.assign`), and past about 20 keys V8 makes that
 * copy a dictionary, several times slower to copy and to read. A call the envelope approves sets
 * none of them.
 */
const cleared = (context: StageMachineContext): Partial<StageMachineContext> => ({
  ...(context.policy !== undefined && { policy: undefined }),
  ...(context.denial !== undefined && { denial: undefined }),
  ...(context.grantedBy !== undefined && { grantedBy: undefined }),
  ...(context.deadline !== undefined && { deadline: undefined }),
});

/**
 * Act's worker: one actor for all of an attempt's model and tool calls, where each call was an
 * actor of its own (XState builds, starts and stops an actor per invocation, which cost more
 * than the calls' own bookkeeping). It makes the calls it is told (`CALL_MODEL` on entering
 * `calling`, `RUN_TOOL` on entering `running`), each once, and reports each as an event; its
 * signal aborts them when Act is left. A worker restored from a snapshot has lost its commands:
 * it makes the call its stage's state waits for, read from the stage as it starts (which a fresh
 * worker does too, for the first call; the command that follows is then already made).
 */
function actWorker(
  services: StageServices,
  self: AnyActorRef,
  sendBack: (report: ActReport) => void,
  receive: (listener: (command: ActCommand) => void) => void,
): () => void {
  const controller = new AbortController();
  const made = new Set<string>();
  let inFlight = 0;
  const settled = (report: ActReport) => {
    inFlight--;
    sendBack(report);
  };
  const make = (command: ActCommand) => {
    const { context } = command;
    const key =
      command.type === "CALL_MODEL" ? `model ${context.modelCalls}` : awaitedProposal(context);
    if (made.has(key)) return;
    made.add(key);
    inFlight++;
    // Made inside the promise: a call (or its input) that throws as it is made has failed, as
    // one that rejects has, and is reported the same.
    // A call is the stage's work: made once the stage holds its slot (at once if it does).
    const slotted = <T>(call: () => Promise<T>) =>
      withSlot(services.slots, context.stageExecutionId, self._parent, call);
    if (command.type === "CALL_MODEL") {
      const { modelCalls } = context;
      new Promise<TurnOutcome>((resolve) =>
        resolve(slotted(() => services.callModel(modelCallInput({ context }), controller.signal))),
      ).then(
        (output) => settled({ type: "MODEL_REPLIED", modelCalls, output }),
        (error: unknown) => settled({ type: "MODEL_FAILED", modelCalls, error }),
      );
    } else {
      const proposalId = key;
      new Promise<ToolRun>((resolve) =>
        resolve(slotted(() => services.runTool(toolCallInput({ context }), controller.signal))),
      ).then(
        (output) => settled({ type: "TOOL_RAN", proposalId, output }),
        (error: unknown) => settled({ type: "TOOL_CRASHED", proposalId, error }),
      );
    }
  };
  receive(make);
  const waiting = pendingCommand(self._parent?.getSnapshot());
  if (waiting) make(waiting);
  // Only a call still running hears the abort: a stage that leaves Act with none (its last
  // reply completed it) skips building the reason, an exception with its stack trace.
  return () => {
    if (inFlight > 0) controller.abort(new DOMException("the stage left Act", "AbortError"));
  };
}

/** The call a stage's state waits for, if it waits for one. */
function pendingCommand(
  stage: { matches(state: unknown): boolean; context: StageMachineContext } | undefined,
): ActCommand | undefined {
  if (stage?.matches({ act: "calling" })) return { type: "CALL_MODEL", context: stage.context };
  if (stage?.matches({ act: { dispatch: "running" } }))
    return { type: "RUN_TOOL", context: stage.context };
  return undefined;
}
