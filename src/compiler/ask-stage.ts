import { assign, createMachine, fromPromise, setup } from "xstate";
import type { JsonValue, StageResult } from "../definitions/contract.js";
import type { JsonSchema } from "../definitions/json-schema.js";
import type { AskTimeout } from "../definitions/wait-timeout.js";
import type { ErrorView } from "../errors.js";
import type { AuditEventInput } from "../events/audit.js";
import { deadlineIso, deadlineOf, sleepUntil } from "./deadline.js";
import { withImplementations } from "./machine-cache.js";
import { viewOf } from "./stage-entries.js";

/** What an ask stage asks a person: a value valid under `schema`. */
export interface InputRequest {
  runId: string;
  stageId: string;
  stageExecutionId: string;
  prompt: string;
  schema: JsonSchema;
  /** When nobody answering is taken as the timeout's answer (ISO time), if the ask has one. */
  deadline?: string;
}

/** What an ask stage is started with: its request, and its timeout if it has one. */
export type AskInput = Omit<InputRequest, "deadline"> & { timeout?: AskTimeout };

/** An answer, and who gave it (for the audit log). */
export interface InputAnswer {
  value: JsonValue;
  by?: string;
}

export interface AskServices {
  audit(event: AuditEventInput): void;
  /** Whether somebody can be asked now (an interactor that takes values). */
  canAsk(): boolean;
  /** Asks until a valid answer comes; rejects when nobody answers. */
  ask(request: InputRequest, signal: AbortSignal): Promise<InputAnswer>;
  /** Why `value` is not a valid answer to `request` (one line per problem), or nothing. */
  problems(request: InputRequest, value: unknown): string[] | undefined;
  now(): number;
}

export type AskEvent = ({ type: "INPUT_ANSWER" } & InputAnswer) | { type: "RECHECK" };

export interface AskContext {
  request: InputRequest;
  timeout?: AskTimeout;
  /** The timeout's deadline (epoch ms), kept in context so a restored ask waits only the rest. */
  deadline?: number;
  answer?: InputAnswer;
  /** Why the stage failed: its deadline passed and its timeout says fail. */
  error?: ErrorView;
}

/**
 * The ask stage: asks the interactors that take values (the terminal), or, with
 * nobody there, parks (tag `suspended`) until an answer is sent in (`INPUT_ANSWER`, from a
 * resume). Only a valid answer ends it; the value is its output. Tag `ask-pending` says it waits.
 * An ask with a timeout waits in `timed`, whose timer ends the wait at the deadline stored in
 * context: the timeout's answer is taken, or the stage fails (`Cancellation/WaitTimedOut`). A
 * resume after the deadline, or an answer that comes after it, finds the deadline passed at once.
 */
/** The ask machine of a pipeline not bound to services, or whose stages never ask: never run. */
export const UNBOUND_ASK_MACHINE = createMachine({ id: "ask" });

export function createAskMachine(services: AskServices): AskMachine {
  compiled ??= compileAskMachine();
  // An empty machine of the ask setup carries its implementations for these services.
  const { implementations } = askSetup(services).createMachine({ context: {} as AskContext });
  return withImplementations(compiled, implementations);
}

type AskMachine = ReturnType<typeof compileAskMachine>;

let compiled: AskMachine | undefined;

/** What the compiled states run with until a caller gives its own services: nothing. */
const NOT_BOUND = {} as AskServices;

function askSetup(services: AskServices) {
  const audit = (context: AskContext, type: AuditEventInput["type"], payload: object) =>
    services.audit({
      type,
      runId: context.request.runId,
      stageId: context.request.stageId,
      stageExecutionId: context.request.stageExecutionId,
      attempt: 1,
      payload: { ...payload },
    });
  const pastDeadline = (context: AskContext) =>
    context.deadline !== undefined && services.now() >= context.deadline;
  return setup({
    types: {} as {
      context: AskContext;
      events: AskEvent;
      input: AskInput;
      output: StageResult;
    },
    actors: {
      askPerson: fromPromise<InputAnswer, InputRequest>(({ input, signal }) =>
        services.ask(input, signal),
      ),
      deadline: fromPromise<void, { until: number }>(({ input, signal }) =>
        sleepUntil(input.until, () => services.now(), signal),
      ),
    },
    guards: {
      canAsk: () => services.canAsk(),
      validAnswer: ({ context, event }) =>
        event.type === "INPUT_ANSWER" &&
        services.problems(context.request, event.value) === undefined,
      timed: ({ context }) => context.deadline !== undefined,
      pastDeadline: ({ context }) => pastDeadline(context),
      fallbackAnswers: ({ context }) =>
        context.timeout !== undefined && context.timeout.fallback !== "fail",
    },
    actions: {
      startClock: assign(({ context }) => {
        if (!context.timeout) return {};
        const deadline = deadlineOf(services.now(), context.timeout);
        return { deadline, request: { ...context.request, deadline: deadlineIso(deadline) } };
      }),
      requested: ({ context }) => {
        audit(context, "StageSetup", { kind: "ask", upstream: 0 });
        audit(context, "InputRequested", {
          prompt: context.request.prompt,
          schema: context.request.schema,
          ...(context.request.deadline !== undefined && { deadline: context.request.deadline }),
        });
      },
      timedOut: ({ context }) =>
        audit(context, "WaitTimedOut", {
          kind: "ask",
          deadline: context.request.deadline,
          fallback: context.timeout?.fallback === "fail" ? "fail" : "answer",
        }),
      takeFallback: assign(({ context }) => {
        const fallback = context.timeout?.fallback;
        return typeof fallback === "object"
          ? { answer: { value: fallback.answer, by: "deadline" } }
          : {};
      }),
      failAtDeadline: assign(({ context }) => ({
        error: viewOf(
          "Cancellation/WaitTimedOut",
          `nobody answered ${context.request.stageId} by its deadline (${context.request.deadline})`,
          { stageId: context.request.stageId, deadline: context.request.deadline },
        ),
      })),
      answered: ({ context }) => {
        audit(context, "InputAnswered", {
          value: context.answer?.value ?? null,
          by: context.answer?.by ?? "unknown",
        });
        audit(context, "StageExited", { verdict: "ok", capHit: false, attemptCount: 1 });
      },
      failed: ({ context }) =>
        audit(context, "StageExited", {
          verdict: "fail",
          reason: context.error?.message,
          capHit: false,
          attemptCount: 1,
          ...(context.error && { error: context.error }),
        }),
    },
  });
}

type AskSetup = ReturnType<typeof askSetup>;

/**
 * Asking and waiting, and how they are entered: the same states with or without a deadline
 * (inside `timed` its timer runs over them, and a passed deadline ends the wait before anyone is
 * asked again).
 */
function waitStates(ask: AskSetup, timed: boolean) {
  return {
    routing: ask.createStateConfig({
      always: [
        ...(timed ? [{ guard: "pastDeadline" as const, target: "#ask.timedOut" }] : []),
        ...(timed ? [] : [{ guard: "timed" as const, target: "timed" }]),
        { guard: "canAsk", target: "asking" },
        { target: "waiting" },
      ],
    }),
    asking: ask.createStateConfig({
      tags: ["ask-pending"],
      invoke: {
        src: "askPerson",
        input: ({ context }) => context.request,
        onDone: {
          target: "#ask.answered",
          actions: assign({ answer: ({ event }) => event.output }),
        },
        // Nobody answered (the prompt closed): wait for an answer from a resume.
        onError: "waiting",
      },
    }),
    // RECHECK (sent when a run resumes) asks again: whoever the resumed host can ask, or here.
    waiting: ask.createStateConfig({
      tags: ["ask-pending", "suspended"],
      on: { RECHECK: "routing" },
    }),
  };
}

function compileAskMachine() {
  const ask = askSetup(NOT_BOUND);
  const { routing, asking, waiting } = waitStates(ask, false);
  const timedStates = waitStates(ask, true);
  return ask.createMachine({
    id: "ask",
    context: ({ input: { timeout, ...request } }) => ({
      request,
      ...(timeout !== undefined && { timeout }),
    }),
    entry: ["startClock", "requested"],
    initial: "routing",
    on: {
      INPUT_ANSWER: [
        // An answer after the deadline is too late: the timeout has answered.
        { guard: "pastDeadline", target: ".timedOut" },
        {
          guard: "validAnswer",
          target: ".answered",
          actions: assign({
            answer: ({ event }) =>
              event.type === "INPUT_ANSWER"
                ? { value: event.value, ...(event.by !== undefined && { by: event.by }) }
                : undefined,
          }),
        },
      ],
    },
    states: {
      routing,
      asking,
      waiting,
      timed: {
        initial: "routing",
        invoke: {
          src: "deadline",
          input: ({ context }) => ({ until: context.deadline ?? 0 }),
          onDone: "timedOut",
        },
        states: timedStates,
      },
      timedOut: {
        entry: "timedOut",
        always: [
          { guard: "fallbackAnswers", target: "answered", actions: "takeFallback" },
          { target: "failed", actions: "failAtDeadline" },
        ],
      },
      answered: { type: "final", entry: "answered" },
      failed: { type: "final", entry: "failed" },
    },
    output: ({ context }) => answerResult(context),
  });
}

function answerResult({ request, answer, error }: AskContext): StageResult {
  if (error)
    return {
      stageId: request.stageId,
      stageExecutionId: request.stageExecutionId,
      verdict: "fail",
      reason: error.message,
      capHit: false,
      attemptCount: 1,
      error,
    };
  const value = answer?.value ?? null;
  return {
    stageId: request.stageId,
    stageExecutionId: request.stageExecutionId,
    verdict: "ok",
    output: value,
    parsed: value,
    capHit: false,
    attemptCount: 1,
  };
}
