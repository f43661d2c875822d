import { basename } from "node:path";
import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3FinishReason,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3Text,
  type LanguageModelV3ToolCall,
  type LanguageModelV3Usage,
} from "@ai-sdk/provider";
import { closestName } from "../definitions/closest-name.js";
import { DIAGNOSTIC_CODES, type LoadResult } from "../definitions/diagnostics.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { scriptStageProblems } from "../definitions/script-stages.js";
import { StagechartError } from "../errors.js";
import * as z from "../zod.js";
import { streamOf } from "./reply-stream.js";
import { scriptAnswerer } from "./script-answers.js";
import { loadScriptFile, type Script } from "./script-file.js";
import type { ScriptEntry } from "./script-schema.js";
import type { ModelHandle, StagechartCallInfo } from "./types.js";

export const SCRIPTED_PROVIDER = "stagechart.scripted";

export interface ScriptedModelOptions {
  /** Defaults to the script's file name. */
  modelId?: string;
}

/** The part of the call info that picks the entry; the rest is not needed here. */
const callInfoSchema: z.ZodMiniType<
  Pick<StagechartCallInfo, "stageId" | "pipelineId" | "position">
> = z.object({
  stageId: z.string().check(z.minLength(1)),
  pipelineId: z.optional(z.string().check(z.minLength(1))),
  position: z.optional(z.int().check(z.gte(0))),
});

interface Answer {
  content: (LanguageModelV3Text | LanguageModelV3ToolCall)[];
  finishReason: LanguageModelV3FinishReason;
  usage: LanguageModelV3Usage;
}

/**
 * A deterministic, offline `LanguageModelV3` that answers each call with the next entry of the
 * calling stage's script (the format: docs/guide/scripted-model.md). A stage the script has no entries
 * (or an empty list) fails at its first call with `Validation/ScriptStageMissing`; a stage whose entries have
 * run out gets a line of text, which the stage treats as any reply without a tool call.
 */
export function createScriptedModel(
  script: Script,
  options: ScriptedModelOptions = {},
): ModelHandle {
  const cursors = new Map<string, number>();

  async function answer(call: LanguageModelV3CallOptions): Promise<Answer> {
    call.abortSignal?.throwIfAborted();
    const info = callInfoSchema.safeParse(call.providerOptions?.stagechart);
    if (!info.success) {
      throw providerError(
        "scripted model: the call has no valid providerOptions.stagechart {stageId, pipelineId?, position?}",
        "scripted://unknown",
        400,
      );
    }
    const { stageId, pipelineId, position } = info.data;
    const qualified = `${pipelineId}/${stageId}`;
    const key = pipelineId !== undefined && script.stages.has(qualified) ? qualified : stageId;
    // The entry is taken when the call starts, so an aborted or failed call consumes it too.
    const index = position ?? cursors.get(key) ?? 0;
    cursors.set(key, index + 1);
    const entries = script.stages.get(key);
    // An empty list says the script never reaches the stage: as if it were not there.
    if (entries === undefined || entries.length === 0)
      throw stageMissing(script, stageId, pipelineId);
    const entry = entries[index];
    if (entry === undefined) {
      const text = `(scripted model: no more entries for stage ${key})`;
      return reply(call, {}, [{ type: "text", text }]);
    }
    // A zero-length timer still costs a macrotask; benchmarks make thousands of calls.
    if (entry.delayMs > 0) await delay(entry.delayMs, call.abortSignal);
    const { reply: scripted } = entry;
    switch (scripted.kind) {
      case "error":
        throw providerError(scripted.message, `scripted://${stageId}`, scripted.status);
      case "text":
        return reply(call, entry.usage, [{ type: "text", text: scripted.text }]);
      case "tool-calls":
        return reply(
          call,
          entry.usage,
          scripted.calls.map((c, i) => ({
            type: "tool-call",
            toolCallId: toolCallId(key, index, i),
            toolName: c.tool,
            input: JSON.stringify(c.args),
          })),
        );
    }
  }

  const model: LanguageModelV3 = {
    specificationVersion: "v3",
    provider: SCRIPTED_PROVIDER,
    modelId: options.modelId ?? basename(script.file),
    supportedUrls: {},
    async doGenerate(call): Promise<LanguageModelV3GenerateResult> {
      return { ...(await answer(call)), warnings: [] };
    },
    // Its answer, in pieces: through `this.doGenerate`, so a wrapper that answers for it (a
    // test's, say) answers its streams too.
    async doStream(call) {
      return { stream: streamOf(await this.doGenerate(call)) };
    },
  };
  const interactor = scriptAnswerer(script);
  return {
    model,
    capabilities: { toolCalling: true, streaming: true },
    releasesSignal: true,
    checkPipeline: (pipeline) => unknownStages(script, pipeline),
    ...(interactor && { interactor }),
  };
}

/** The script's keys that name no stage of `pipeline` it could answer, as one error. */
function unknownStages(script: Script, pipeline: PipelineDefinition): StagechartError | undefined {
  const problems = scriptStageProblems(script, pipeline).filter((p) => p.severity === "error");
  if (problems.length === 0) return undefined;
  return new StagechartError(
    DIAGNOSTIC_CODES.scriptStageUnknown,
    `the scripted model ${script.file} does not fit pipeline ${pipeline.id}: ${problems.map((p) => p.message).join("; ")}`,
    { script: script.file, pipelineId: pipeline.id, problems: problems.map((p) => p.message) },
  );
}

/** A call from a stage the script has no entries for: the run fails here, not at the turn cap. */
function stageMissing(
  script: Script,
  stageId: string,
  pipelineId: string | undefined,
): StagechartError {
  const keys = [...script.stages.keys()];
  const near = closestName(stageId, keys);
  const of = pipelineId === undefined ? "" : ` of pipeline ${pipelineId}`;
  const has = keys.length > 0 ? `its stages are ${keys.join(", ")}` : "it has no stages";
  return new StagechartError(
    DIAGNOSTIC_CODES.scriptStageMissing,
    `the scripted model ${script.file} has no entries for stage ${stageId}${of}; ${has}${near === undefined ? "" : ` (is ${near} a misspelling of ${stageId}?)`}`,
    { script: script.file, stageId, ...(pipelineId !== undefined && { pipelineId }), stages: keys },
  );
}

export async function createScriptedModelFromFile(
  file: string,
  options: ScriptedModelOptions = {},
): Promise<LoadResult<ModelHandle>> {
  const loaded = await loadScriptFile(file);
  return loaded.ok ? { ...loaded, value: createScriptedModel(loaded.value, options) } : loaded;
}

function reply(
  call: LanguageModelV3CallOptions,
  usage: ScriptEntry["usage"],
  content: Answer["content"],
): Answer {
  const calls = content.some((part) => part.type === "tool-call");
  const inputTokens = usage.inputTokens ?? promptTokens(call.prompt);
  const outputTokens = usage.outputTokens ?? estimateTokens(content);
  return {
    content,
    finishReason: calls
      ? { unified: "tool-calls", raw: "tool-calls" }
      : { unified: "stop", raw: "stop" },
    usage: {
      inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: outputTokens, text: outputTokens, reasoning: 0 },
    },
  };
}

/** About four characters a token, the usual rule of thumb for English and code. */
const estimateTokens = (value: unknown): number => Math.ceil(JSON.stringify(value).length / 4);

/** The JSON length of a prompt's first `count` messages, `last` the last of them, by first message. */
const measuredPrefixes = new WeakMap<object, { count: number; length: number; last: object }>();

/**
 * `estimateTokens(prompt)`, without serialising the whole prompt each turn: a turn's prompt
 * repeats the earlier turns' messages (the same objects, as the runtime reuses them), so the
 * length of all but the last message is kept, by the first message, and the next prompt that
 * still holds the same messages there measures only what follows them. The prompt's length is
 * its messages' plus the brackets and commas between them.
 */
export function promptTokens(prompt: LanguageModelV3CallOptions["prompt"]): number {
  const first = prompt[0];
  if (first === undefined) return Math.ceil(2 / 4);
  const known = measuredPrefixes.get(first);
  const reused =
    known !== undefined && known.count <= prompt.length && prompt[known.count - 1] === known.last;
  let length = reused ? known.length : 0;
  for (let at = reused ? known.count : 0; at < prompt.length; at++) {
    const message = prompt[at] as object;
    // The last message may still grow (a tool message gathers the turn's results): not kept.
    if (at === prompt.length - 1 && at > 0)
      measuredPrefixes.set(first, { count: at, length, last: prompt[at - 1] as object });
    length += JSON.stringify(message).length;
  }
  return Math.ceil((length + 2 + prompt.length - 1) / 4);
}

/** Stable across runs and resumes: the script key, the entry's index and the call's. */
const toolCallId = (key: string, index: number, call: number): string =>
  `call_${key.replace(/[^A-Za-z0-9_-]/g, "_")}_${index}_${call}`;

function providerError(message: string, url: string, status: number): APICallError {
  return new APICallError({
    message,
    url,
    requestBodyValues: {},
    statusCode: status,
    isRetryable: status === 429 || status >= 500,
  });
}

/** Waits `ms`, or rejects with the signal's reason the moment it aborts, as `fetch` does. */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
