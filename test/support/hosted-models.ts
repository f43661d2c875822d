import { resolveModelSpec } from "../../src/models/spec.js";
import type { ModelHandle } from "../../src/models/types.js";
import type { LlmServer } from "./llm-server.js";

export const TEST_KEY = "sk-test-4f1c9a7e-never-store-me";

/** Each hosted provider, pointed at the local test server the way a user would point it. */
export const PROVIDERS = [
  {
    provider: "openai",
    wire: "openai",
    path: "/v1/chat/completions",
    spec: () => "openai:test-model",
    env: (server: LlmServer) => ({
      OPENAI_API_KEY: TEST_KEY,
      OPENAI_BASE_URL: `${server.origin}/v1`,
    }),
    keyHeader: (headers: Record<string, unknown>) => headers.authorization,
    expectedKeyHeader: `Bearer ${TEST_KEY}`,
  },
  {
    provider: "openai-responses",
    wire: "responses",
    path: "/v1/responses",
    spec: () => "openai-responses:test-model",
    env: (server: LlmServer) => ({
      OPENAI_API_KEY: TEST_KEY,
      OPENAI_BASE_URL: `${server.origin}/v1`,
    }),
    keyHeader: (headers: Record<string, unknown>) => headers.authorization,
    expectedKeyHeader: `Bearer ${TEST_KEY}`,
  },
  {
    provider: "anthropic",
    wire: "anthropic",
    path: "/v1/messages",
    spec: () => "anthropic:test-model",
    env: (server: LlmServer) => ({
      ANTHROPIC_API_KEY: TEST_KEY,
      ANTHROPIC_BASE_URL: `${server.origin}/v1`,
    }),
    keyHeader: (headers: Record<string, unknown>) => headers["x-api-key"],
    expectedKeyHeader: TEST_KEY,
  },
  {
    provider: "openai-compatible",
    wire: "openai",
    path: "/v1/chat/completions",
    spec: (server: LlmServer) => `openai-compatible:${server.origin}/v1#test-model`,
    env: () => ({ OPENAI_COMPATIBLE_API_KEY: TEST_KEY }),
    keyHeader: (headers: Record<string, unknown>) => headers.authorization,
    expectedKeyHeader: `Bearer ${TEST_KEY}`,
  },
] as const;

export type HostedProviderCase = (typeof PROVIDERS)[number];

/** The provider's model on the test server, as a user would configure it. */
export const providerModel = (p: HostedProviderCase, server: LlmServer): Promise<ModelHandle> =>
  hostedModel(p.spec(server), p.env(server));

/** The model for `spec`, or the test fails with the resolution error. */
export async function hostedModel(spec: string, env: Record<string, string>): Promise<ModelHandle> {
  const resolved = await resolveModelSpec(spec, env);
  if (!resolved.ok) throw resolved.error;
  return resolved.value;
}

/** An openai-compatible model on the test server, no key. */
export const compatibleModel = (server: LlmServer): Promise<ModelHandle> =>
  hostedModel(`openai-compatible:${server.origin}/v1#test-model`, {});
