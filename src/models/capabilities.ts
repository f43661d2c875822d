import type { LanguageModelV3 } from "@ai-sdk/provider";
import { StagechartError } from "../errors.js";

/**
 * How servers refuse a request with tools for a model or setup that cannot call them: Ollama
 * ("registry.ollama.ai/library/gemma:2b does not support tools"), vLLM without
 * `--enable-auto-tool-choice`, llama.cpp server without `--jinja`, and the usual wordings of others.
 */
const NO_TOOL_CALLING = [
  /does not support (?:tools|tool[ _-]?call|function[ _-]?call)/i,
  /\b(?:tools|tool[ _-]?calls?|tool[ _-]?calling|function[ _-]?call(?:s|ing)?) (?:is |are )?not supported/i,
  /"auto" tool choice requires --enable-auto-tool-choice/i,
  /tools param requires --jinja/i,
  /unsupported param: tools/i,
];

/** Whether a provider's error message says the model cannot call tools. */
export const refusesToolCalling = (message: string): boolean =>
  NO_TOOL_CALLING.some((pattern) => pattern.test(message));

/**
 * The error of a stage whose model cannot call tools — declared by its handle, or said by the
 * provider (`reason`, the provider's message) — naming the model and what to do about it.
 */
export function missingToolCalling(model: LanguageModelV3, reason?: string): StagechartError {
  const name = `${model.provider}:${model.modelId}`;
  const why = reason === undefined ? "" : ` (the provider said: ${reason})`;
  return new StagechartError(
    "ProviderCapability/MissingToolCalling",
    `the model ${name} cannot call tools${why}, and stages end only through a tool call; pick a model with tool calling`,
    { provider: model.provider, modelId: model.modelId, ...(reason !== undefined && { reason }) },
  );
}
