import {
  APICallError,
  type LanguageModelV3CallOptions,
  type LanguageModelV3FunctionTool,
  type LanguageModelV3GenerateResult,
} from "@ai-sdk/provider";
import { classifyTurn, type ModelReply } from "../compiler/act-rules.js";
import type { ModelCallInput } from "../compiler/stage-services-port.js";
import type { TurnOutcome } from "../compiler/stage-types.js";
import { transcriptCutoff } from "../compiler/transcript-keys.js";
import { compileSchema, describeSchemaErrors } from "../definitions/json-schema.js";
import { isStagechartError, StagechartError } from "../errors.js";
import { missingToolCalling, refusesToolCalling } from "../models/capabilities.js";
import { IDLE_TIMEOUT_ERROR } from "../models/idle-timeout.js";
import { costOf } from "../models/prices.js";
import { readReply } from "../models/reply-stream.js";
import type { ModelHandle, StagechartCallInfo } from "../models/types.js";
import { type Redactor, redactContent, redactUrl } from "../secrets/redact.js";
import { deadline, deadlineSeries } from "../tools/deadline.js";
import type { JsonValue } from "../tools/types.js";
import { budgetExceeded } from "./budget.js";
import { elapsedMs, type Host } from "./host.js";
import { modelCallKey, RECORDED_CALL, type RecordedCall } from "./journal.js";
import { toPrompt } from "./transcripts.js";

/**
 * One model turn: the transcript so far and the stage's tools go to the model; its reply comes
 * back classified by the Act rules. A reply already in the journal is reused, never re-requested.
 */
export async function callModel(
  host: Host,
  input: ModelCallInput,
  signal: AbortSignal,
): Promise<TurnOutcome> {
  const { stage, runId, stageExecutionId, attempt, turn, modelCalls } = input;
  const key = modelCallKey(runId, stageExecutionId, modelCalls);
  const started = host.clock.now();
  let recorded = host.journal.get(key, RECORDED_CALL);
  if (!recorded) {
    // A reply the journal holds cost nothing now; a call to make must fit the budget.
    const breach = host.budget?.breachOf(input);
    if (breach) {
      host.audit.emit({
        type: "BudgetExceeded",
        runId,
        stageId: stage.id,
        stageExecutionId,
        attempt,
        payload: { ...breach },
      });
      throw budgetExceeded(breach, stage.id);
    }
    if (host.journal.durable) await host.journal.durable();
    recorded = await generate(host, input, signal).then(
      (result): RecordedCall => ({ reply: toReply(result, host.redact) }),
      (error: unknown): RecordedCall => {
        if (signal.aborted) throw error;
        return {
          failure: providerError(error, host.model, host.redact, host.clock.now()).toModelView(),
        };
      },
    );
    host.journal.record(key, recorded);
  }
  if ("failure" in recorded) {
    const { code, message, context } = recorded.failure;
    throw new StagechartError(code, message, context);
  }
  const durationMs = elapsedMs(host, started);
  const validate = compileSchema(stage.completionSchema);
  const outcome = classifyTurn(
    stage,
    recorded.reply,
    { stageExecutionId, attempt, turn },
    {
      validateCompletion: (payload) => {
        if (!validate.ok) return ["the completion schema does not compile"];
        return validate.value(payload) ? [] : describeSchemaErrors(validate.value.errors);
      },
      summarize: (tool, args) => summarize(host, tool, args),
      refuseCompletion: (parsed) =>
        host.hooks[stage.id]?.refuseCompletion?.({
          stage,
          parsed,
          transcript: host.transcripts.read(stageExecutionId, transcriptCutoff(attempt, turn)),
        }),
    },
  );
  // Set on the outcome, not spread into a copy: see classifyTurn.
  outcome.durationMs = durationMs;
  const { model, price } = host.pricing;
  outcome.model = model;
  if (price !== undefined) outcome.costUsd = costOf(price, recorded.reply.usage);
  if (recorded.reply.finishReason !== undefined) outcome.finishReason = recorded.reply.finishReason;
  host.traceContent?.(
    { runId, stageExecutionId, attempt },
    { input: sentSince(host, input), output: recorded.reply },
  );
  return outcome;
}

/** The transcript's entries after the model's last reply in it: what this call told it anew. */
function sentSince(host: Host, { stageExecutionId, attempt, turn }: ModelCallInput): unknown[] {
  const entries = host.transcripts.read(stageExecutionId, transcriptCutoff(attempt, turn));
  let from = entries.length;
  while (from > 0 && (entries[from - 1] as { role?: unknown }).role !== "assistant") from--;
  return entries.slice(from);
}

/**
 * The timeouts of calls to models that release their signal (`ModelHandle.releasesSignal`): a
 * call's signal is an earlier call's when nothing can hear it any more. Other models' calls each
 * get their own: a listener on a signal derived from it would not show.
 */
const releasedSignalDeadline = deadlineSeries();

async function generate(
  host: Host,
  input: ModelCallInput,
  signal: AbortSignal,
): Promise<LanguageModelV3GenerateResult> {
  const callInfo: StagechartCallInfo = {
    runId: input.runId,
    stageId: input.stage.id,
    ...(input.pipelineId !== undefined && { pipelineId: input.pipelineId }),
    stageExecutionId: input.stageExecutionId,
    attempt: input.attempt,
    turn: input.turn,
    position: input.position,
    idleTimeoutMs: host.limits.modelIdleTimeoutMs,
  };
  const timeoutMs = host.limits.modelCallTimeoutMs;
  const timeout = host.model.releasesSignal
    ? releasedSignalDeadline(timeoutMs, signal)
    : deadline(timeoutMs, signal);
  const options: LanguageModelV3CallOptions = {
    // Kept for the attempt's next turn by its signal, which lives as long as the attempt: the
    // host's transcripts outlive the run, and a prompt kept by their entries would too.
    prompt: toPrompt(
      host.transcripts.read(input.stageExecutionId, transcriptCutoff(input.attempt, input.turn)),
      signal,
    ),
    tools: toolManifest(host, input, signal),
    toolChoice: { type: "auto" },
    // A call that hangs is a transient failure after the host's limit, retried like a 5xx.
    abortSignal: timeout.signal,
    providerOptions: { stagechart: { ...callInfo } },
  };
  try {
    if (!host.model.capabilities.streaming) return await host.model.model.doGenerate(options);
    const { stream } = await host.model.model.doStream(options);
    const tell = host.modelDeltas?.wanted() ? host.modelDeltas.tell : undefined;
    const { runId, stage, stageExecutionId, attempt, turn } = input;
    return await readReply(
      stream,
      tell &&
        ((delta) =>
          tell({
            type: "ModelDelta",
            runId,
            stageId: stage.id,
            stageExecutionId,
            attempt,
            turn,
            ...delta,
          })),
      host.redact,
    );
  } finally {
    timeout.clear();
  }
}

/** A stage execution's manifest, kept with what it was built from. */
interface Manifest {
  stage: ModelCallInput["stage"];
  envelope: readonly string[];
  tools: Host["tools"];
  manifest: LanguageModelV3FunctionTool[];
}

/**
 * Manifests by the attempt's signal, which goes with the attempt (the envelope, which the audit
 * log keeps, would keep its manifest as long).
 */
const manifests = new WeakMap<AbortSignal, Manifest>();

/**
 * The envelope's tools and the completion channel — the only tools a stage's model sees. Built
 * once for an attempt's calls: the same envelope, stage and host tools give the same list.
 */
function toolManifest(
  host: Host,
  { stage, envelope }: ModelCallInput,
  signal: AbortSignal,
): LanguageModelV3FunctionTool[] {
  const kept = manifests.get(signal);
  if (kept?.stage === stage && kept.envelope === envelope && kept.tools === host.tools)
    return kept.manifest;
  const manifest = buildManifest(host, stage, envelope);
  manifests.set(signal, { stage, envelope, tools: host.tools, manifest });
  return manifest;
}

function buildManifest(
  host: Host,
  stage: ModelCallInput["stage"],
  envelope: readonly string[],
): LanguageModelV3FunctionTool[] {
  const tools = envelope.flatMap((name) => {
    const tool = host.tools.get(name);
    return tool
      ? [
          {
            type: "function" as const,
            name,
            description: tool.description,
            inputSchema: tool.inputSchema,
          },
        ]
      : [];
  });
  tools.push({
    type: "function",
    name: stage.completionTool,
    description: `Ends the stage "${stage.name}" with its result. Call it exactly once, as the only tool call of its response, when the work is done.`,
    inputSchema: stage.completionSchema,
  });
  return tools;
}

/**
 * The reply as the journal keeps it, without the model's secrets should the server echo one.
 * The journal keeps it for the host's life (and the audit log its usage), so it is built to be
 * small: its calls are mapped (an array grown by pushes, as `flatMap`'s is, keeps room for 17),
 * and its usage is a literal of its keys (one made of spreads alone gets a hidden class of its
 * own in V8, one filled in keeps room for four).
 */
function toReply(result: LanguageModelV3GenerateResult, redact: Redactor): ModelReply {
  const content = redactContent(result.content, redact);
  let text = "";
  for (const part of content) if (part.type === "text") text += part.text;
  const calls = content
    .filter((part) => part.type === "tool-call")
    .map((part) => ({ toolCallId: part.toolCallId, tool: part.toolName, input: part.input }));
  return { text, calls, usage: usageOf(result.usage), finishReason: result.finishReason.unified };
}

/** The tokens a reply reports, in an object of exactly their size (one literal per case). */
function usageOf({
  inputTokens: { total: input, cacheRead },
  outputTokens: { total: output },
}: LanguageModelV3GenerateResult["usage"]): ModelReply["usage"] {
  if (input !== undefined && output !== undefined && cacheRead)
    return { inputTokens: input, outputTokens: output, cachedInputTokens: cacheRead };
  if (input !== undefined && output !== undefined)
    return { inputTokens: input, outputTokens: output };
  if (input !== undefined) return { inputTokens: input };
  return output !== undefined ? { outputTokens: output } : {};
}

function summarize(host: Host, toolName: string, args: JsonValue): string {
  const tool = host.tools.get(toolName);
  if (tool && args !== null && typeof args === "object" && !Array.isArray(args)) {
    try {
      return tool.summarize(args);
    } catch {
      // a summary is a convenience; fall back to the arguments themselves
    }
  }
  const json = JSON.stringify(args);
  return json.length > 120 ? `${json.slice(0, 117)}...` : json;
}

/**
 * Provider failures as stagechart errors: a refusal of tool calling is ProviderCapability,
 * retryable ones (429, 5xx, timeouts, a server gone quiet, a 2xx reply the client cannot
 * parse) are ProviderTransient, other HTTP errors ExtensionHost. Only the status, the URL without
 * its query and the retry-after hint are kept, and every key the host knows is removed from the
 * message — never headers or bodies.
 */
function providerError(
  error: unknown,
  model: ModelHandle,
  redact: Redactor,
  now: number,
): StagechartError {
  if (isStagechartError(error)) return error;
  const message = redact(error instanceof Error ? error.message : String(error));
  if (APICallError.isInstance(error)) {
    // Some servers refuse tools for a model that cannot call them, with a 400 or even a 500.
    if (refusesToolCalling(message)) return missingToolCalling(model.model, message);
    const retryAfterMs = retryAfter(error.responseHeaders, now);
    const context = {
      statusCode: error.statusCode,
      url: redactUrl(redact(error.url)),
      ...(retryAfterMs !== undefined && { retryAfterMs }),
    };
    // A streaming client reports an error event at the stream's start as a 500 it may call not
    // retryable (Anthropic's): a server's error, as a 5xx status is, and as transient.
    if (error.isRetryable || (error.statusCode ?? 0) >= 500)
      return new StagechartError("ProviderTransient/ProviderUnavailable", message, context);
    // A 2xx the client could not read is a garbled reply, not a refusal: the next may be whole.
    return isSuccess(error.statusCode)
      ? new StagechartError("ProviderTransient/ProviderError", message, context)
      : new StagechartError("ExtensionHost/ProviderRejected", message, context);
  }
  if (error instanceof Error && error.name === IDLE_TIMEOUT_ERROR) {
    return new StagechartError(
      "ProviderTransient/IdleTimeout",
      `the model call stalled: ${message}`,
    );
  }
  if (error instanceof Error && error.name === "TimeoutError") {
    return new StagechartError(
      "ProviderTransient/ModelTimeout",
      `the model call timed out: ${message}`,
    );
  }
  return new StagechartError("ProviderTransient/ProviderError", message);
}

const isSuccess = (status: number | undefined): boolean =>
  status !== undefined && status >= 200 && status < 300;

/** The wait a provider asks for, in ms: `retry-after-ms`, or `retry-after` in seconds or as a date. */
function retryAfter(headers: Record<string, string> | undefined, now: number): number | undefined {
  const ms = Number(headers?.["retry-after-ms"]);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.["retry-after"];
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
