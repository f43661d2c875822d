import { createInterface } from "node:readline/promises";
import type { Interactor } from "../compiler/interactor.js";
import type { GrantDecision, GrantRequest } from "../compiler/stage-types.js";
import type { JsonValue } from "../definitions/contract.js";

/** An interactor backed by a function: for tests and for embedders with their own UI. */
export function callbackInteractor(
  name: string,
  answer: (request: GrantRequest, signal: AbortSignal) => GrantDecision | Promise<GrantDecision>,
): Interactor & Pick<Required<Interactor>, "requestGrant"> {
  return { name, requestGrant: async (request, signal) => answer(request, signal) };
}

/** The interactors that answer grant requests. */
export const grantAnswerers = (interactors: readonly Interactor[]): Interactor[] =>
  interactors.filter((interactor) => interactor.requestGrant !== undefined);

/** Asks every interactor that answers grant requests at once (see `firstOf`). */
export const askInteractors = (
  interactors: readonly Interactor[],
  request: GrantRequest,
  signal: AbortSignal,
): Promise<GrantDecision> =>
  firstOf(
    grantAnswerers(interactors),
    (interactor, both) => interactor.requestGrant?.(request, both) as Promise<GrantDecision>,
    signal,
  );

/**
 * Asks every one of `interactors` at once with `ask`; the first answer wins and the others are
 * dismissed (their signal is aborted). Fails only if every one fails.
 */
export async function firstOf<T>(
  interactors: readonly Interactor[],
  ask: (interactor: Interactor, signal: AbortSignal) => Promise<T>,
  signal: AbortSignal,
): Promise<T> {
  const dismiss = new AbortController();
  const both = AbortSignal.any([signal, dismiss.signal]);
  try {
    return await Promise.any(interactors.map((interactor) => ask(interactor, both)));
  } finally {
    dismiss.abort(new Error("answered by another interactor"));
  }
}

/**
 * Asks on a terminal, explaining first what is asked and why, then the question:
 * `plan asks for Edit(src/auth.ts): Edit is not among its tools (Read, Grep, Glob).`
 * `Allow this call once? [y/N]`. Anything but y/yes denies.
 */
export function terminalInteractor(
  streams: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream } = {
    input: process.stdin,
    output: process.stderr,
  },
): Required<Interactor> {
  return {
    name: "terminal",
    async requestGrant(request, signal) {
      const readline = createInterface({
        input: streams.input,
        output: streams.output,
        terminal: false,
      });
      try {
        const question = `${grantExplanation(request)}\nAllow this call once? [y/N] `;
        const answer = await readline.question(question, { signal });
        return /^\s*y(es)?\s*$/i.test(answer) ? "approve" : "deny";
      } finally {
        readline.close();
      }
    },
    async askValue(request, signal) {
      const readline = createInterface({
        input: streams.input,
        output: streams.output,
        terminal: false,
      });
      try {
        const refused = request.problems?.length
          ? `Not a valid answer: ${request.problems.join("; ")}\n`
          : "";
        const question = `${refused}${request.stageId} asks: ${request.prompt}\nAnswer (JSON, or plain text for a string): `;
        return parseAnswer(await readline.question(question, { signal }));
      } finally {
        readline.close();
      }
    },
  };
}

/** A typed answer: JSON when it parses as JSON, else the text itself (a string answer). */
export function parseAnswer(text: string): JsonValue {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed) as JsonValue;
  } catch {
    return trimmed;
  }
}

/** Which stage asks for which call, and why it is asked: no envelope covers the call. */
function grantExplanation(request: GrantRequest): string {
  const { stageId, tool, argsSummary, envelope } = request;
  const why =
    envelope === undefined
      ? "a code or command stage has no tools of its own, and the security mode asks for each call"
      : envelope.length === 0
        ? "it may call no tools"
        : `${tool} is not among its tools (${envelope.join(", ")})`;
  return `${stageId} asks for ${tool}(${argsSummary}): ${why}.`;
}
