import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModelV3 } from "@ai-sdk/provider";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { secretRedactor } from "./redact.js";
import type { ModelHandle } from "./types.js";

/** Where provider settings come from: the process environment unless a test passes its own. */
export type ModelEnv = Readonly<Record<string, string | undefined>>;

export const HOSTED_PROVIDERS = ["openai", "anthropic", "openai-compatible"] as const;
export type HostedProvider = (typeof HOSTED_PROVIDERS)[number];

/** The environment variables each provider reads: its key, and where it is served from. */
const SETTINGS = {
  openai: { key: "OPENAI_API_KEY", baseURL: "OPENAI_BASE_URL", keyRequired: true },
  anthropic: { key: "ANTHROPIC_API_KEY", baseURL: "ANTHROPIC_BASE_URL", keyRequired: true },
  "openai-compatible": { key: "OPENAI_COMPATIBLE_API_KEY", baseURL: undefined, keyRequired: false },
} as const;

export const isHostedProvider = (kind: string): kind is HostedProvider =>
  (HOSTED_PROVIDERS as readonly string[]).includes(kind);

/**
 * A hosted model through its AI SDK provider: `openai:<model>` (Chat Completions),
 * `anthropic:<model>` (Messages), `openai-compatible:<baseURL>#<model>` (Ollama, vLLM,
 * llama.cpp server). The key is read here, once, and only the provider client keeps it.
 */
export function resolveHostedModel(
  provider: HostedProvider,
  target: string,
  env: ModelEnv,
): Result<ModelHandle> {
  const settings = SETTINGS[provider];
  const apiKey = nonEmpty(env[settings.key]);
  if (settings.keyRequired && apiKey === undefined) {
    return err(
      new StagechartError(
        "Validation/ModelKeyMissing",
        `the model ${provider}:${target} needs an API key in the environment variable ${settings.key}`,
        { provider, variable: settings.key },
      ),
    );
  }
  const model = languageModel(provider, target, apiKey, env);
  if (!model.ok) return model;
  return ok({
    model: model.value,
    capabilities: { toolCalling: true },
    redact: secretRedactor(apiKey === undefined ? [] : [apiKey]),
  });
}

function languageModel(
  provider: HostedProvider,
  target: string,
  apiKey: string | undefined,
  env: ModelEnv,
): Result<LanguageModelV3> {
  switch (provider) {
    case "openai": {
      const baseURL = nonEmpty(env[SETTINGS.openai.baseURL]);
      return named(target, provider, (id) =>
        createOpenAI({ apiKey, ...(baseURL && { baseURL }) }).chat(id),
      );
    }
    case "anthropic": {
      const baseURL = nonEmpty(env[SETTINGS.anthropic.baseURL]);
      return named(target, provider, (id) =>
        createAnthropic({ apiKey, ...(baseURL && { baseURL }) }).messages(id),
      );
    }
    case "openai-compatible": {
      const hash = target.lastIndexOf("#");
      const baseURL = target.slice(0, hash);
      const modelId = target.slice(hash + 1);
      if (hash <= 0 || !URL.canParse(baseURL) || !/^https?:$/.test(new URL(baseURL).protocol)) {
        return err(
          new StagechartError(
            "Validation/ModelSpecInvalid",
            `openai-compatible needs an http(s) base URL and a model, as in openai-compatible:http://localhost:11434/v1#llama3.1; got "${target}"`,
            { provider, target },
          ),
        );
      }
      return named(modelId, provider, (id) =>
        createOpenAICompatible({
          name: provider,
          baseURL,
          ...(apiKey && { apiKey }),
          includeUsage: true,
        }).chatModel(id),
      );
    }
  }
}

function named(
  modelId: string,
  provider: HostedProvider,
  create: (modelId: string) => LanguageModelV3,
): Result<LanguageModelV3> {
  if (modelId.trim() === "") {
    return err(
      new StagechartError(
        "Validation/ModelSpecInvalid",
        `the model spec for ${provider} names no model`,
        { provider },
      ),
    );
  }
  return ok(create(modelId));
}

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value;
