import type { LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import type { ReplyDelta } from "../../src/events/run-events.js";
import { readReply, streamOf } from "../../src/models/reply-stream.js";
import { secretRedactor } from "../../src/secrets/redact.js";

const KEY = "sk-live-7d2f9c4e1b";
const redact = secretRedactor([KEY]);
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const finish: LanguageModelV3StreamPart = {
  type: "finish",
  finishReason: { unified: "stop", raw: "stop" },
  usage,
};

const streamFrom = (parts: LanguageModelV3StreamPart[]) =>
  new ReadableStream<LanguageModelV3StreamPart>({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });

const textParts = (pieces: string[]): LanguageModelV3StreamPart[] => [
  { type: "text-start", id: "t" },
  ...pieces.map((delta) => ({ type: "text-delta" as const, id: "t", delta })),
  { type: "text-end", id: "t" },
];

async function read(parts: LanguageModelV3StreamPart[]) {
  const deltas: ReplyDelta[] = [];
  const reply = await readReply(streamFrom(parts), (d) => deltas.push(d), redact);
  return { reply, deltas };
}

describe("a streamed reply, read", () => {
  it("is the whole reply doGenerate gives, its pieces told in order on the way", async () => {
    const whole = {
      content: [
        { type: "text" as const, text: "I will look for the callers of auth first." },
        {
          type: "tool-call" as const,
          toolCallId: "c1",
          toolName: "Grep",
          input: '{"pattern":"auth"}',
        },
      ],
      finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
      usage,
    };
    const deltas: ReplyDelta[] = [];
    const reply = await readReply(streamOf(whole), (d) => deltas.push(d), redact);
    expect(reply).toEqual({ ...whole, warnings: [] });
    const text = deltas.flatMap((d) => (d.kind === "text" ? [d.text] : []));
    expect(text.length).toBeGreaterThan(1);
    expect(text.join("")).toBe("I will look for the callers of auth first.");
    const input = deltas.flatMap((d) => (d.kind === "tool-call" ? [d] : []));
    expect(input.every((d) => d.toolCallId === "c1" && d.tool === "Grep")).toBe(true);
    expect(input.map((d) => d.input).join("")).toBe('{"pattern":"auth"}');
    expect(deltas.findIndex((d) => d.kind === "tool-call")).toBeGreaterThan(
      deltas.findLastIndex((d) => d.kind === "text"),
    );
  });

  it("never tells a key, even one split over two pieces; the reply it returns is as sent", async () => {
    const { reply, deltas } = await read([
      ...textParts(["use the key sk-live-7d", "2f9c4e1b to call", " it"]),
      finish,
    ]);
    const told = deltas.map((d) => (d.kind === "text" ? d.text : "")).join("");
    expect(told).toBe("use the key [redacted] to call it");
    for (const delta of deltas) expect(JSON.stringify(delta)).not.toMatch(/sk-live|7d2f9c4e1b/);
    // Redacting what is kept is the journal's part, as for a reply that came whole.
    expect(reply.content).toEqual([{ type: "text", text: `use the key ${KEY} to call it` }]);
  });

  it("tells a long run of text without spaces before it ends, holding back only its tail", async () => {
    const long = "x".repeat(5000);
    const deltas: ReplyDelta[] = [];
    const stream = streamFrom([...textParts([long.slice(0, 4500), long.slice(4500)]), finish]);
    await readReply(stream, (d) => deltas.push(d), redact);
    expect(deltas.length).toBe(2);
    expect(deltas.map((d) => (d.kind === "text" ? d.text : "")).join("")).toBe(long);
  });

  it("fails as the call would have when the stream reports an error or ends before its finish", async () => {
    const refused = new Error("overloaded");
    await expect(
      read([...textParts(["half a rep"]), { type: "error", error: refused }]),
    ).rejects.toBe(refused);
    await expect(read(textParts(["cut short"]))).rejects.toThrow(
      "the model's reply stream ended before it finished",
    );
  });
});
