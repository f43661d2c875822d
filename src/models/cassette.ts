import { renameSync, writeFileSync } from "node:fs";
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  SharedV3ProviderMetadata,
  SharedV3Warning,
} from "@ai-sdk/provider";
import { argsDigest } from "../compiler/act-rules.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { readRegularText } from "../files.js";
import type { JsonValue } from "../tools/types.js";
import * as z from "../zod.js";

/**
 * A cassette: every model exchange of one run, in the order the calls were made. Each exchange
 * is filed under the call's place in the run (stage execution, attempt, turn and the call's
 * position among the stage's model calls) with a digest of what was asked, and holds what the
 * provider answered — a `LanguageModelV3GenerateResult` — or how it failed.
 */
export interface Cassette {
  version: 1;
  runId: string;
  model: { provider: string; modelId: string };
  exchanges: Exchange[];
}

export interface Exchange {
  stageId: string;
  stageExecutionId: string;
  attempt: number;
  turn: number;
  /** The call's position among the model calls of its stage id in the run. */
  call: number;
  /** SHA-256 of the prompt and tools, with the run id replaced so replays under new ids match. */
  requestDigest: string;
  outcome: RecordedResponse | RecordedFailure;
}

/** What a replay hands back: a generate result without the HTTP request and response details. */
export interface RecordedResponse {
  response: Pick<
    LanguageModelV3GenerateResult,
    "content" | "finishReason" | "usage" | "warnings" | "providerMetadata"
  >;
}

export interface RecordedFailure {
  /** `isRetryable` is set for provider API errors (HTTP), which replay as such. */
  error: {
    name: string;
    message: string;
    url?: string;
    statusCode?: number;
    isRetryable?: boolean;
  };
}

/** Where an exchange belongs, independent of the run's id. */
export interface ExchangePlace {
  runId: string;
  stageId: string;
  stageExecutionId: string;
  attempt: number;
  turn: number;
  call: number;
}

const callInfoSchema = z.object({
  runId: z.string().check(z.minLength(1)),
  stageId: z.string().check(z.minLength(1)),
  stageExecutionId: z.string().check(z.minLength(1)),
  attempt: z.int().check(z.gte(1)),
  turn: z.int().check(z.gte(1)),
  position: z.int().check(z.gte(0)),
});

/**
 * The place of a call from its `providerOptions.stagechart` (a `StagechartCallInfo`), or an
 * error naming what is missing.
 */
export function placeOf(call: LanguageModelV3CallOptions): Result<ExchangePlace> {
  const info = callInfoSchema.safeParse(call.providerOptions?.stagechart);
  if (!info.success) {
    return err(
      new StagechartError(
        "Validation/CassetteCallUnplaced",
        "recording and replaying need providerOptions.stagechart {runId, stageId, stageExecutionId, attempt, turn, position}, which stagechart's model turns always pass",
        { issues: info.error.issues.map((issue) => issue.path.join(".")) },
      ),
    );
  }
  const { position, ...place } = info.data;
  return ok({ ...place, call: position });
}

/** A stage execution id relative to its run: `plan/1` for `run-1/plan/1`. */
export const relativeExecutionId = (runId: string, stageExecutionId: string): string =>
  stageExecutionId.startsWith(`${runId}/`)
    ? stageExecutionId.slice(runId.length + 1)
    : stageExecutionId;

export function requestDigest(call: LanguageModelV3CallOptions, runId: string): string {
  const request = JSON.stringify({ prompt: call.prompt, tools: call.tools ?? [] });
  return argsDigest(JSON.parse(request.split(runId).join("<run>")) as JsonValue);
}

const exchangeSchema = z.object({
  stageId: z.string(),
  stageExecutionId: z.string(),
  attempt: z.int(),
  turn: z.int(),
  call: z.int(),
  requestDigest: z.string(),
  outcome: z.union([
    z.object({
      response: z.object({
        content: z.array(z.looseObject({ type: z.string() })),
        finishReason: z.object({ unified: z.string(), raw: z.optional(z.string()) }),
        usage: z.looseObject({
          inputTokens: z.looseObject({}),
          outputTokens: z.looseObject({}),
        }),
        warnings: z.array(z.looseObject({ type: z.string() })),
        providerMetadata: z.optional(z.record(z.string(), z.record(z.string(), z.unknown()))),
      }),
    }),
    z.object({
      error: z.object({
        name: z.string(),
        message: z.string(),
        url: z.optional(z.string()),
        statusCode: z.optional(z.int()),
        isRetryable: z.optional(z.boolean()),
      }),
    }),
  ]),
});

const cassetteSchema = z.object({
  version: z.literal(1),
  runId: z.string().check(z.minLength(1)),
  model: z.object({ provider: z.string(), modelId: z.string() }),
  exchanges: z.array(exchangeSchema),
});

/** Far more than any recorded run needs; a larger file is refused rather than read whole. */
const MAX_CASSETTE_BYTES = 256 * 1024 * 1024;

export function readCassette(file: string): Result<Cassette> {
  const read = readRegularText(file, MAX_CASSETTE_BYTES);
  if (!read.ok) return err(invalid(file, read.why));
  const { text } = read;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return err(invalid(file, `not JSON: ${error instanceof Error ? error.message : error}`));
  }
  const parsed = cassetteSchema.safeParse(json);
  if (!parsed.success) {
    const where = parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    return err(invalid(file, where.join("; ")));
  }
  // The schema checks the shape; the parts themselves are the provider's, kept as they were.
  return ok(parsed.data as Cassette);
}

/** Writes the whole cassette through a temporary file, so a killed run never leaves half of one. */
export function writeCassette(file: string, cassette: Cassette): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(cassette, null, 2)}\n`);
  renameSync(temporary, file);
}

export function recordedResponse(result: LanguageModelV3GenerateResult): RecordedResponse {
  const { content, finishReason, usage, warnings, providerMetadata } = result;
  return {
    response: {
      content,
      finishReason,
      usage,
      warnings: warnings as SharedV3Warning[],
      ...(providerMetadata && { providerMetadata: providerMetadata as SharedV3ProviderMetadata }),
    },
  };
}

function invalid(file: string, why: string): StagechartError {
  return new StagechartError(
    "Validation/CassetteInvalid",
    `the cassette ${file} is invalid: ${why}`,
    {
      file,
    },
  );
}
