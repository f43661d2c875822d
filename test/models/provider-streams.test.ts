import type {
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3StreamPart,
} from "@ai-sdk/provider";
import { APICallError } from "@ai-sdk/provider";
import { afterEach, describe, expect, it } from "vitest";
import { PROVIDERS, providerModel } from "../support/hosted-models.js";
import { type LlmServer, type ServerReply, startLlmServer } from "../support/llm-server.js";

const grep: LanguageModelV3FunctionTool = {
  type: "function",
  name: "Grep",
  description: "Searches files",
  inputSchema: {
    type: "object",
    properties: {
      pattern: { type: "string" },
      paths: { type: "array", items: { type: "string" } },
    },
    required: ["pattern"],
  },
};

const call: LanguageModelV3CallOptions = {
  prompt: [{ role: "user", content: [{ type: "text", text: "Find the auth module." }] }],
  tools: [grep],
};

const TEXT = "Looking for the auth module first — then I will rename it.";
const ARGS = { pattern: "auth", paths: ["src/", "test/"] };

let server: LlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Every part of the stream `doStream` answers `reply` with, in order. */
async function streamOf(p: (typeof PROVIDERS)[number], reply: ServerReply) {
  server = await startLlmServer([reply]);
  const model = await providerModel(p, server);
  const { stream } = await model.model.doStream(call);
  const parts: LanguageModelV3StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  expect(parts.filter((part) => part.type === "error")).toEqual([]);
  return parts;
}

const ofType = <T extends LanguageModelV3StreamPart["type"]>(
  parts: LanguageModelV3StreamPart[],
  type: T,
) =>
  parts.filter(
    (part): part is Extract<LanguageModelV3StreamPart, { type: T }> => part.type === type,
  );

describe.each(PROVIDERS)("the test server streams to the $provider client", (p) => {
  it("asks for the stream the way the client's streaming call does", async () => {
    await streamOf(p, { text: "ok" });
    expect(server?.requests[0]).toMatchObject({ path: p.path, body: { stream: true } });
  });

  it("sends text in several deltas that add up to the scripted text, finishing with stop", async () => {
    const parts = await streamOf(p, { text: TEXT, usage: { input: 210, output: 17 } });

    const deltas = ofType(parts, "text-delta").map((part) => part.delta);
    expect(deltas.filter((delta) => delta !== "").length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe(TEXT);
    expect(ofType(parts, "text-start")).toHaveLength(1);
    expect(ofType(parts, "text-end")).toHaveLength(1);
    expect(ofType(parts, "tool-call")).toEqual([]);
    const [finish] = ofType(parts, "finish");
    expect(finish?.finishReason.unified).toBe("stop");
    expect(finish?.usage).toMatchObject({
      inputTokens: { total: 210 },
      outputTokens: { total: 17 },
    });
    expect(parts.at(-1)).toBe(finish);
  });

  it("sends a tool call's arguments in several deltas, then the whole call, finishing with tool-calls", async () => {
    const parts = await streamOf(p, {
      text: TEXT,
      toolCalls: [{ name: "Grep", args: ARGS }],
      usage: { input: 300, output: 40 },
    });

    expect(
      ofType(parts, "text-delta")
        .map((part) => part.delta)
        .join(""),
    ).toBe(TEXT);
    const [start] = ofType(parts, "tool-input-start");
    expect(start).toMatchObject({ toolName: "Grep" });
    const deltas = ofType(parts, "tool-input-delta").filter((part) => part.id === start?.id);
    expect(deltas.length).toBeGreaterThan(1);
    expect(JSON.parse(deltas.map((part) => part.delta).join(""))).toEqual(ARGS);
    const calls = ofType(parts, "tool-call");
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ toolCallId: start?.id, toolName: "Grep" });
    expect(JSON.parse(calls[0]?.input ?? "")).toEqual(ARGS);
    const [finish] = ofType(parts, "finish");
    expect(finish?.finishReason.unified).toBe("tool-calls");
    expect(finish?.usage).toMatchObject({
      inputTokens: { total: 300 },
      outputTokens: { total: 40 },
    });
  });

  it("sends each of several tool calls whole, in order, without text", async () => {
    const parts = await streamOf(p, {
      toolCalls: [
        { name: "Grep", args: ARGS },
        { name: "Grep", args: { pattern: "login" } },
      ],
    });

    expect(
      ofType(parts, "text-delta")
        .map((part) => part.delta)
        .join(""),
    ).toBe("");
    const calls = ofType(parts, "tool-call");
    expect(calls.map((c) => JSON.parse(c.input))).toEqual([ARGS, { pattern: "login" }]);
    expect(new Set(calls.map((c) => c.toolCallId)).size).toBe(2);
    for (const c of calls) {
      const input = ofType(parts, "tool-input-delta").filter((part) => part.id === c.toolCallId);
      expect(input.map((part) => part.delta).join("")).toBe(c.input);
    }
    expect(ofType(parts, "finish")[0]?.finishReason.unified).toBe("tool-calls");
  });

  it("answers an error unstreamed, which the client's streaming call throws as an APICallError", async () => {
    server = await startLlmServer([{ status: 429, message: "slow down" }]);
    const model = await providerModel(p, server);

    const failure = await model.model.doStream(call).then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(APICallError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ statusCode: 429, message: "slow down", isRetryable: true });
  });

  it("spaces the events of a trickled stream trickleMs apart", async () => {
    const started = Date.now();
    const parts = await streamOf(p, { text: "a short reply", trickleMs: 20 });
    const took = Date.now() - started;

    expect(
      ofType(parts, "text-delta")
        .map((part) => part.delta)
        .join(""),
    ).toBe("a short reply");
    // at least eight events: the reply's framing and its four text deltas
    expect(took).toBeGreaterThanOrEqual(8 * 20);
  });
});
