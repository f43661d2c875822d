import { assign, createMachine, fromPromise, setup } from "xstate";
import type { JsonValue, StageResult } from "../definitions/contract.js";
import type { JsonSchema } from "../definitions/json-schema.js";
import type { AuditEventInput } from "../events/audit.js";
import { withImplementations } from "./machine-cache.js";

/** What an ask stage asks a person: a value valid under `schema`. */
export interface InputRequest {
  runId: string;
  stageId: string;
  stageExecutionId: string;
  prompt: string;
  schema: JsonSchema;
}

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
}

export type AskEvent = ({ type: "INPUT_ANSWER" } & InputAnswer) | { type: "RECHECK" };

export interface AskContext {
  request: InputRequest;
  answer?: InputAnswer;
}

/**
 * The ask stage: asks the interactors that take values (the terminal), or, with
 * nobody there, parks (tag `suspended`) until an answer is sent in (`INPUT_ANSWER`, from a
 * resume). Only a valid answer ends it; the value is its output. Tag `ask-pending` says it waits.
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
  return setup({
    types: {} as {
      context: AskContext;
      events: AskEvent;
      input: InputRequest;
      output: StageResult;
    },
    actors: {
      askPerson: fromPromise<InputAnswer, InputRequest>(({ input, signal }) =>
        services.ask(input, signal),
      ),
    },
    guards: {
      canAsk: () => services.canAsk(),
      validAnswer: ({ context, event }) =>
        event.type === "INPUT_ANSWER" &&
        services.problems(context.request, event.value) === undefined,
    },
    actions: {
      requested: ({ context }) => {
        audit(context, "StageSetup", { kind: "ask", upstream: 0 });
        audit(context, "InputRequested", {
          prompt: context.request.prompt,
          schema: context.request.schema,
        });
      },
      answered: ({ context }) => {
        audit(context, "InputAnswered", {
          value: context.answer?.value ?? null,
          by: context.answer?.by ?? "unknown",
        });
        audit(context, "StageExited", { verdict: "ok", capHit: false, attemptCount: 1 });
      },
    },
  });
}

function compileAskMachine() {
  return askSetup(NOT_BOUND).createMachine({
    id: "ask",
    context: ({ input }) => ({ request: input }),
    entry: "requested",
    initial: "routing",
    on: {
      INPUT_ANSWER: {
        guard: "validAnswer",
        target: ".answered",
        actions: assign({
          answer: ({ event }) =>
            event.type === "INPUT_ANSWER"
              ? { value: event.value, ...(event.by !== undefined && { by: event.by }) }
              : undefined,
        }),
      },
    },
    states: {
      routing: { always: [{ guard: "canAsk", target: "asking" }, { target: "waiting" }] },
      asking: {
        tags: ["ask-pending"],
        invoke: {
          src: "askPerson",
          input: ({ context }) => context.request,
          onDone: { target: "answered", actions: assign({ answer: ({ event }) => event.output }) },
          // Nobody answered (the prompt closed): wait for an answer from a resume.
          onError: "waiting",
        },
      },
      // RECHECK (sent when a run resumes) asks again: whoever the resumed host can ask, or here.
      waiting: { tags: ["ask-pending", "suspended"], on: { RECHECK: "routing" } },
      answered: { type: "final", entry: "answered" },
    },
    output: ({ context }) => answerResult(context),
  });
}

function answerResult({ request, answer }: AskContext): StageResult {
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
