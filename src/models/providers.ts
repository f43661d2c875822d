import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModelV3 } from "@ai-sdk/provider";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { type ModelEnv, PROVIDER_SETTINGS } from "../secrets/key-variables.js";
import { secretRedactor, splitUrlKey, withoutUrlCredentials } from "../secrets/redact.js";
import { idleLimited } from "./idle-timeout.js";
import type { ModelHandle } from "./types.js";

export type { ModelEnv };

const HOSTED_PROVIDERS = ["openai", "openai-responses", "anthropic", "openai-compatible"] as const;
export type HostedProvider = (typeof HOSTED_PROVIDERS)[number];

/** What a hosted spec names after its `<provider>:`. */
interface HostedTarget {
  modelId: string;
  /** openai-compatible only: the server, as the spec writes it (credentials included). */
  baseURL?: string;
  /** `false` when the spec says the model cannot call tools (`…#<model>?tools=false`). */
  toolCalling: boolean;
}

export interface HostedModelOptions {
  /**
   * A key is needed even where the provider makes it optional: the run was started with a key
   * in its base URL, which is never stored, so a resumed run reads it from the key variable.
   */
  keyRequired?: boolean;
}

/**
 * A hosted model through its AI SDK provider: `openai:<model>` (Chat Completions),
 * `openai-responses:<model>` (Responses), `anthropic:<model>` (Messages),
 * `openai-compatible:<baseURL>#<model>[?tools=false]` (Ollama, vLLM, llama.cpp server). The
 * spec is checked before the key. The key is the one a base URL carries in its userinfo
 * (`http://user:KEY@host/v1`), else the key variable's; it is read here, once, and only the
 * provider client keeps it — the URL it gets has no credentials. A call's idle limit is watched
 * on its HTTP exchange (`idleLimited`).
 */
export function resolveHostedModel(
  provider: HostedProvider,
  target: string,
  env: ModelEnv,
  options: HostedModelOptions = {},
): Result<ModelHandle> {
  const parsed =
    provider === "openai-compatible" ? compatibleTarget(target) : named(provider, target);
  if (!parsed.ok) return parsed;
  const settings = PROVIDER_SETTINGS[provider];
  const server = serverOf(provider, parsed.value, env);
  const variableKey = nonEmpty(env[settings.key]);
  const apiKey = server.key ?? variableKey;
  if ((settings.keyRequired || options.keyRequired) && apiKey === undefined) {
    return err(
      new StagechartError(
        "Validation/ModelKeyMissing",
        `the model ${provider}:${withoutUrlCredentials(target)} needs an API key in the environment variable ${settings.key}`,
        { provider, variable: settings.key },
      ),
    );
  }
  const { modelId } = parsed.value;
  return ok({
    model: idleLimited((fetch) => languageModel(provider, modelId, server.url, apiKey, fetch)),
    // Every provider client streams: a turn shows its reply as it comes.
    capabilities: { toolCalling: parsed.value.toolCalling, streaming: true },
    redact: secretRedactor([apiKey, variableKey]),
  });
}

/** Where the provider is served from (the default when undefined), and the key its URL carries. */
function serverOf(
  provider: HostedProvider,
  { baseURL }: HostedTarget,
  env: ModelEnv,
): { url?: string; key?: string } {
  const variable = PROVIDER_SETTINGS[provider].baseURL;
  const url = baseURL ?? (variable === undefined ? undefined : nonEmpty(env[variable]));
  return url === undefined ? {} : splitUrlKey(url);
}

function languageModel(
  provider: HostedProvider,
  modelId: string,
  baseURL: string | undefined,
  apiKey: string | undefined,
  fetch: typeof globalThis.fetch | undefined,
): LanguageModelV3 {
  const common = { ...(baseURL && { baseURL }), ...(fetch && { fetch }) };
  switch (provider) {
    case "openai":
      return createOpenAI({ apiKey, ...common }).chat(modelId);
    case "openai-responses":
      return createOpenAI({ apiKey, ...common }).responses(modelId);
    case "anthropic":
      return createAnthropic({ apiKey, ...common }).messages(modelId);
    case "openai-compatible":
      return createOpenAICompatible({
        name: provider,
        baseURL: baseURL ?? "",
        ...(apiKey && { apiKey }),
        ...(fetch && { fetch }),
        includeUsage: true,
      }).chatModel(modelId);
  }
}

/** `<baseURL>#<model>`, optionally followed by `?tools=false` (or `?tools=true`, the default). */
function compatibleTarget(target: string): Result<HostedTarget> {
  const hash = target.lastIndexOf("#");
  const baseURL = target.slice(0, hash);
  if (hash <= 0 || !URL.canParse(baseURL) || !/^https?:$/.test(new URL(baseURL).protocol)) {
    return invalid(
      `openai-compatible needs an http(s) base URL and a model, as in openai-compatible:http://localhost:11434/v1#llama3.1; got "${withoutUrlCredentials(target)}"`,
      { provider: "openai-compatible", target: withoutUrlCredentials(target) },
    );
  }
  const rest = target.slice(hash + 1);
  const query = rest.indexOf("?");
  const modelId = query === -1 ? rest : rest.slice(0, query);
  const model = named("openai-compatible", modelId);
  if (!model.ok) return model;
  if (query === -1) return ok({ ...model.value, baseURL });
  const options = new URLSearchParams(rest.slice(query + 1));
  const tools = options.get("tools");
  const unknown = [...options.keys()].filter((key) => key !== "tools");
  if (unknown.length > 0 || (tools !== "true" && tools !== "false")) {
    return invalid(
      `openai-compatible takes one option after the model, tools=true or tools=false (as in #gemma:2b?tools=false); got "?${rest.slice(query + 1)}"`,
      { provider: "openai-compatible", target: withoutUrlCredentials(target) },
    );
  }
  return ok({ modelId, baseURL, toolCalling: tools === "true" });
}

function named(provider: HostedProvider, modelId: string): Result<HostedTarget> {
  if (modelId.trim() === "") {
    return invalid(`the model spec for ${provider} names no model, as in ${EXAMPLES[provider]}`, {
      provider,
    });
  }
  return ok({ modelId, toolCalling: true });
}

const EXAMPLES: Record<HostedProvider, string> = {
  openai: "openai:gpt-4.1",
  "openai-responses": "openai-responses:gpt-5",
  anthropic: "anthropic:claude-sonnet-4-5",
  "openai-compatible": "openai-compatible:http://localhost:11434/v1#llama3.1",
};

const invalid = (message: string, context: Record<string, unknown>) =>
  err(new StagechartError("Validation/ModelSpecInvalid", message, context));

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value.trim() === "" ? undefined : value;
