import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
} from "@ai-sdk/provider";
import { ok, type Result, StagechartError } from "../errors.js";
import {
  type Cassette,
  type Exchange,
  placeOf,
  readCassette,
  relativeExecutionId,
  requestDigest,
} from "./cassette.js";
import { streamOf } from "./reply-stream.js";
import type { ModelHandle } from "./types.js";

export const REPLAY_PROVIDER = "stagechart.replay";

/** `replay:<file>`: the cassette's model, answering each call as it answered when recorded. */
export function createReplayModelFromFile(file: string): Result<ModelHandle> {
  const cassette = readCassette(file);
  return cassette.ok ? ok(createReplayModel(cassette.value)) : cassette;
}

/**
 * A deterministic `LanguageModelV3` over a cassette. A call is matched by its place in the run
 * (stage execution relative to the run, and the call's position); its attempt, turn and request
 * digest must equal the recorded ones, or the call fails with `Validation/ReplayMismatch`.
 */
export function createReplayModel(cassette: Cassette): ModelHandle {
  const byPlace = new Map(
    cassette.exchanges.map((e) => [
      placeKey(relativeExecutionId(cassette.runId, e.stageExecutionId), e.call),
      e,
    ]),
  );

  async function answer(call: LanguageModelV3CallOptions) {
    call.abortSignal?.throwIfAborted();
    const place = placeOf(call);
    if (!place.ok) throw place.error;
    const { runId, stageId, stageExecutionId, attempt, turn } = place.value;
    const relative = relativeExecutionId(runId, stageExecutionId);
    const exchange = byPlace.get(placeKey(relative, place.value.call));
    const digest = requestDigest(call, runId);
    const mismatch = describeMismatch(exchange, { attempt, turn, digest });
    if (mismatch !== undefined || exchange === undefined) {
      throw new StagechartError(
        "Validation/ReplayMismatch",
        `replay: stage ${stageId} (${relative}) attempt ${attempt} turn ${turn}: ${mismatch ?? "no recorded exchange"}`,
        { stageId, stageExecutionId: relative, attempt, turn, call: place.value.call },
      );
    }
    if ("error" in exchange.outcome) throw replayedFailure(exchange.outcome.error);
    return exchange.outcome.response;
  }

  const model: LanguageModelV3 = {
    specificationVersion: "v3",
    provider: REPLAY_PROVIDER,
    modelId: `${cassette.model.provider}:${cassette.model.modelId}`,
    supportedUrls: {},
    doGenerate: answer,
    // A cassette keeps each reply whole; replayed, it streams in pieces as the provider's did.
    async doStream(call) {
      return { stream: streamOf(await this.doGenerate(call)) };
    },
  };
  return { model, capabilities: { toolCalling: true, streaming: true }, releasesSignal: true };
}

const placeKey = (relativeExecution: string, call: number): string =>
  `${relativeExecution}#${call}`;

function describeMismatch(
  exchange: Exchange | undefined,
  actual: { attempt: number; turn: number; digest: string },
): string | undefined {
  if (exchange === undefined) return "the cassette has no exchange for this call";
  if (exchange.attempt !== actual.attempt || exchange.turn !== actual.turn)
    return `the cassette recorded this call at attempt ${exchange.attempt} turn ${exchange.turn}`;
  if (exchange.requestDigest !== actual.digest)
    return `the request (prompt and tools) differs from the recorded one (digest ${actual.digest.slice(0, 12)}, recorded ${exchange.requestDigest.slice(0, 12)})`;
  return undefined;
}

/** The recorded failure, thrown again the way the provider threw it. */
function replayedFailure(
  failure: Extract<Exchange["outcome"], { error: unknown }>["error"],
): Error {
  if (failure.isRetryable !== undefined) {
    return new APICallError({
      message: failure.message,
      url: failure.url ?? "replay://cassette",
      requestBodyValues: {},
      ...(failure.statusCode !== undefined && { statusCode: failure.statusCode }),
      ...(failure.isRetryable !== undefined && { isRetryable: failure.isRetryable }),
    });
  }
  const error = new Error(failure.message);
  error.name = failure.name;
  return error;
}
