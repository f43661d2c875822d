import { existsSync } from "node:fs";
import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3GenerateResult,
} from "@ai-sdk/provider";
import { type Redactor, redactContent, redactorOf, redactUrl } from "../secrets/redact.js";
import {
  type Cassette,
  type Exchange,
  type ExchangePlace,
  placeOf,
  readCassette,
  recordedResponse,
  requestDigest,
  writeCassette,
} from "./cassette.js";
import { readReply } from "./reply-stream.js";
import type { ModelHandle } from "./types.js";

/**
 * Wraps any model so that every exchange is written to the cassette `file` as it completes
 * (the whole file is rewritten each time, so it is complete up to the last finished call).
 * A cassette already in `file` for the same run — a run resumed with `--record` — is continued;
 * one of another run is replaced. Calls cancelled by the run are not exchanges and are left out.
 */
export function recordModel(handle: ModelHandle, file: string): ModelHandle {
  const inner = handle.model;
  const redact = redactorOf(handle);
  let cassette: Cassette | undefined;

  const save = (place: ExchangePlace, exchange: Exchange) => {
    const current = cassette ?? startCassette(file, place.runId, inner);
    // A call repeated after a crash replaces its first recording.
    const kept = current.exchanges.filter(
      (e) => !(e.stageExecutionId === place.stageExecutionId && e.call === place.call),
    );
    cassette = { ...current, exchanges: [...kept, exchange] };
    writeCassette(file, cassette);
  };

  /** A call's place in the run, and how its outcome is saved there (a cancellation is not). */
  const exchangeOf = (call: LanguageModelV3CallOptions) => {
    const place = placeOf(call);
    if (!place.ok) throw place.error;
    const { runId, stageId, stageExecutionId, attempt, turn, call: position } = place.value;
    const exchange = {
      stageId,
      stageExecutionId,
      attempt,
      turn,
      call: position,
      requestDigest: requestDigest(call, runId),
    };
    return {
      answered: (result: LanguageModelV3GenerateResult) =>
        save(place.value, { ...exchange, outcome: recordedResponse(result) }),
      failed: (error: unknown) => {
        if (!isCancellation(error))
          save(place.value, { ...exchange, outcome: recordedFailure(error, redact) });
      },
    };
  };

  const model: LanguageModelV3 = {
    specificationVersion: "v3",
    provider: inner.provider,
    modelId: inner.modelId,
    supportedUrls: inner.supportedUrls,
    async doGenerate(call) {
      const exchange = exchangeOf(call);
      try {
        const answer = await inner.doGenerate(call);
        const result = { ...answer, content: redactContent(answer.content, redact) };
        exchange.answered(result);
        return result;
      } catch (error) {
        exchange.failed(error);
        throw error;
      }
    },
    // The stream goes on to the caller as it comes; the exchange is saved whole once it ends.
    async doStream(call) {
      const exchange = exchangeOf(call);
      let result: Awaited<ReturnType<LanguageModelV3["doStream"]>>;
      try {
        result = await inner.doStream(call);
      } catch (error) {
        exchange.failed(error);
        throw error;
      }
      const [caller, recorded] = result.stream.tee();
      readReply(recorded, undefined, redact).then(
        (whole) => exchange.answered({ ...whole, content: redactContent(whole.content, redact) }),
        exchange.failed,
      );
      return { ...result, stream: caller };
    },
  };
  return { ...handle, model };
}

function startCassette(file: string, runId: string, model: LanguageModelV3): Cassette {
  const existing = existsSync(file) ? readCassette(file) : undefined;
  if (existing?.ok && existing.value.runId === runId) return existing.value;
  return {
    version: 1,
    runId,
    model: { provider: model.provider, modelId: model.modelId },
    exchanges: [],
  };
}

const isCancellation = (error: unknown): boolean =>
  error instanceof Error && error.name === "AbortError";

/** How a call failed, without the provider's secrets (the message may echo a key). */
function recordedFailure(error: unknown, redact: Redactor): Exchange["outcome"] {
  if (APICallError.isInstance(error)) {
    return {
      error: {
        name: error.name,
        message: redact(error.message),
        url: redactUrl(redact(error.url)),
        ...(error.statusCode !== undefined && { statusCode: error.statusCode }),
        isRetryable: error.isRetryable,
      },
    };
  }
  const { name, message } = error instanceof Error ? error : new Error(String(error));
  return { error: { name, message: redact(message) } };
}
