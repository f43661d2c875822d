import { afterEach, describe, expect, it } from "vitest";
import { resolveHostedModel } from "../../src/models/providers.js";
import { resolveModelSpec } from "../../src/models/spec.js";
import { runStage } from "../../src/runtime/run-stage.js";
import { type HostedProviderCase, hostedModel, PROVIDERS } from "../support/hosted-models.js";
import { type LlmServer, startLlmServer } from "../support/llm-server.js";
import { loadStage, modelHarness, stageInput } from "../support/stage-harness.js";

const plan = loadStage("plan");
const submitPlan = {
  name: "submit_plan",
  args: { summary: "Rename auth", steps: ["rename", "test"] },
};

/** `test-model` as its provider names it: no price is known for it, so no cost is given. */
const modelNamed = (provider: string) =>
  `${provider === "openai-responses" ? "openai" : provider}:test-model`;

let server: LlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe.each(PROVIDERS)("the $provider provider over HTTP", (p) => {
  it("runs the plan stage to completion through the real client", async () => {
    server = await startLlmServer([
      {
        toolCalls: [{ name: "Grep", args: { pattern: "auth" } }],
        usage: { input: 200, output: 12 },
      },
      { toolCalls: [submitPlan], usage: { input: 260, output: 25 } },
    ]);
    const model = await hostedModel(p.spec(server), p.env(server));
    const h = modelHarness(model);

    const result = await runStage(h.host, stageInput(plan));

    expect(result).toMatchObject({ verdict: "ok", parsed: submitPlan.args, capHit: false });
    expect(server.requests.map((r) => r.path)).toEqual([p.path, p.path]);
    expect(p.keyHeader(server.requests[0]?.headers ?? {})).toBe(p.expectedKeyHeader);
    const turns = h.audit.events.filter((e) => e.type === "ModelTurn").map((e) => e.payload);
    expect(turns).toEqual([
      {
        turn: 1,
        outcome: "calls",
        tools: ["Grep"],
        usage: { inputTokens: 200, outputTokens: 12 },
        durationMs: expect.any(Number),
        model: modelNamed(p.provider),
        // The provider's own reason, unified by its AI SDK client: the reply called a tool.
        finishReason: "tool-calls",
      },
      {
        turn: 2,
        outcome: "completion",
        tools: ["submit_plan"],
        usage: { inputTokens: 260, outputTokens: 25 },
        durationMs: expect.any(Number),
        model: modelNamed(p.provider),
        // The provider's own reason, unified by its AI SDK client: the reply called a tool.
        finishReason: "tool-calls",
      },
    ]);
    expect(h.types()).toContain("ToolSucceeded");
    // the second request carries the Grep result back, as the provider's own tool message
    expect(JSON.stringify(server.requests[1]?.body)).toContain("src/auth.ts");
  });

  it("opens the stage's first request with a user turn after the instructions", async () => {
    server = await startLlmServer([{ toolCalls: [submitPlan] }]);
    const h = modelHarness(await hostedModel(p.spec(server), p.env(server)));

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    const [first] = server.requests;
    expect(first?.refused).toBeUndefined();
    const { instructions, turns } = conversationOf(p.wire, first?.body ?? {});
    expect(instructions).toContain("Task: refactor auth module");
    expect(turns).toEqual([
      {
        role: "user",
        text: 'Begin the stage "Plan" as instructed. When the work is done, call `submit_plan` with the result.',
      },
    ]);
  });

  it("steers a reply with nothing in it, and the next request is still one the provider takes", async () => {
    server = await startLlmServer([{ text: "" }, { toolCalls: [submitPlan] }]);
    const h = modelHarness(await hostedModel(p.spec(server), p.env(server)));

    const result = await runStage(h.host, stageInput(plan));

    expect(server.requests.map((r) => r.refused)).toEqual([undefined, undefined]);
    expect(result).toMatchObject({ verdict: "ok", parsed: submitPlan.args });
  });

  it("keeps blank text beside a tool call out of the next request, which the provider takes", async () => {
    server = await startLlmServer([
      { text: "\n\n", toolCalls: [{ name: "Grep", args: { pattern: "auth" } }] },
      { toolCalls: [submitPlan] },
    ]);
    const h = modelHarness(await hostedModel(p.spec(server), p.env(server)));

    const result = await runStage(h.host, stageInput(plan));

    expect(server.requests.map((r) => r.refused)).toEqual([undefined, undefined]);
    expect(result).toMatchObject({ verdict: "ok", parsed: submitPlan.args });
  });

  it("offers the model the stage's envelope and its completion tool, and nothing else", async () => {
    server = await startLlmServer([{ toolCalls: [submitPlan] }]);
    const h = modelHarness(await hostedModel(p.spec(server), p.env(server)));
    await runStage(h.host, stageInput(plan));
    const tools = (server.requests[0]?.body.tools ?? []) as Record<string, unknown>[];
    const names = tools.map((t) => (t.function as { name?: string } | undefined)?.name ?? t.name);
    expect(names.sort()).toEqual(["Glob", "Grep", "Read", "submit_plan"]);
  });
});

describe("model specs", () => {
  it.each([
    ["openai:gpt-4.1", "OPENAI_API_KEY"],
    ["openai-responses:gpt-5", "OPENAI_API_KEY"],
    ["anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"],
  ])("refuses %s without %s, before anything runs", async (spec, variable) => {
    const resolved = await resolveModelSpec(spec, { [variable]: "  " });
    expect(resolved).toMatchObject({
      ok: false,
      error: { code: "Validation/ModelKeyMissing", context: { variable } },
    });
    if (!resolved.ok) expect(resolved.error.message).toContain(variable);
  });

  it("runs an openai-compatible server without a key, as Ollama needs none", async () => {
    const resolved = await resolveModelSpec(
      "openai-compatible:http://localhost:11434/v1#llama3.1",
      {},
    );
    expect(resolved.ok && resolved.value.model.modelId).toBe("llama3.1");
  });

  it.each([
    "openai-compatible:llama3.1",
    "openai-compatible:http://localhost:11434/v1#",
    "openai-compatible:ftp://host/v1#m",
  ])("explains a malformed openai-compatible spec: %s", async (spec) => {
    const resolved = await resolveModelSpec(spec, {});
    expect(resolved).toMatchObject({ ok: false, error: { code: "Validation/ModelSpecInvalid" } });
  });

  it.each([
    ["openai:", "model"],
    ["openai-responses:", "model"],
    ["anthropic:", "model"],
    ["openai: ", "model"],
    ["anthropic:\t", "model"],
    ["openai-compatible:", "base URL and model"],
    ["scripted:", "script file"],
    ["replay: ", "cassette"],
  ])("says what %j leaves out, before asking for a key", async (spec, missing) => {
    const resolved = await resolveModelSpec(spec, {});
    expect(resolved).toMatchObject({
      ok: false,
      error: { code: "Validation/ModelSpecInvalid", context: { spec } },
    });
    if (!resolved.ok) expect(resolved.error.message).toContain(`names no ${missing}`);
  });

  it("checks a hosted spec's model before its key", () => {
    const resolved = resolveHostedModel("anthropic", " ", {});
    expect(resolved).toMatchObject({ ok: false, error: { code: "Validation/ModelSpecInvalid" } });
  });

  it("names every spec it knows when it meets one it does not", async () => {
    const resolved = await resolveModelSpec("gemini:pro", {});
    expect(resolved).toMatchObject({
      ok: false,
      error: { code: "Validation/ModelSpecUnsupported" },
    });
    if (!resolved.ok)
      expect(resolved.error.message).toContain("openai-compatible:<baseURL>#<model>");
  });
});

describe("a key in a base URL", () => {
  const KEY = "canary-9b3f-in-the-url";

  it.each(PROVIDERS)(
    "is $provider's key, sent by the client to a URL without credentials",
    async (p) => {
      server = await startLlmServer([{ toolCalls: [submitPlan] }]);
      const withKey = server.origin.replace("://", `://user:${KEY}@`);
      const env = Object.fromEntries(
        Object.entries(p.env(server)).map(([name, value]) => [
          name,
          name.endsWith("_BASE_URL") ? value.replace(server?.origin ?? "", withKey) : value,
        ]),
      );
      const spec = p.spec(server).replace(server.origin, withKey);
      const h = modelHarness(await hostedModel(spec, env));

      const result = await runStage(h.host, stageInput(plan));

      expect(result.verdict).toBe("ok");
      expect(p.keyHeader(server.requests[0]?.headers ?? {})).toBe(
        p.wire === "anthropic" ? KEY : `Bearer ${KEY}`,
      );
    },
  );

  it("is required again when the run that had it resumes without it", async () => {
    const spec = "openai-compatible:http://localhost:11434/v1#llama3.1";
    const resolved = await resolveModelSpec(spec, {}, { keyRequired: true });
    expect(resolved).toMatchObject({
      ok: false,
      error: {
        code: "Validation/ModelKeyMissing",
        context: { variable: "OPENAI_COMPATIBLE_API_KEY" },
      },
    });
  });

  it.each([
    `openai-compatible:http://user:${KEY}@localhost:11434/v1`,
    `openai-compatible:http://${KEY}@localhost:11434/v1#m?tools=maybe`,
    `gemini:https://u:${KEY}@host/v1`,
    `openai-compatible:http://u:${KEY}@`,
  ])("is left out of the error about a bad spec: %s", async (spec) => {
    const resolved = await resolveModelSpec(spec, {});
    expect(resolved.ok).toBe(false);
    if (!resolved.ok) expect(JSON.stringify(resolved.error.toModelView())).not.toContain(KEY);
  });
});

/**
 * A request's instructions and the turns after them, as text: Anthropic keeps the instructions
 * in `system`, OpenAI's APIs in a first `system` (or `developer`) message.
 */
function conversationOf(wire: HostedProviderCase["wire"], body: Record<string, unknown>) {
  const textOf = (content: unknown): string =>
    typeof content === "string"
      ? content
      : (content as { text?: string }[]).map((part) => part.text ?? "").join("");
  const messages = (body[wire === "responses" ? "input" : "messages"] ?? []) as {
    role: string;
    content: unknown;
  }[];
  const turns = messages.map((m) => ({ role: m.role, text: textOf(m.content) }));
  if (wire === "anthropic") return { instructions: textOf(body.system), turns };
  const [first, ...rest] = turns;
  return { instructions: first?.text, turns: rest };
}
