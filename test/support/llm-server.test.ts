import { afterEach, describe, expect, it } from "vitest";
import { type LlmServer, type ServerReply, startLlmServer } from "./llm-server.js";

let server: LlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function post(path: string, body: Record<string, unknown>) {
  server ??= await startLlmServer([{ text: "ok" }]);
  const response = await fetch(`${server.origin}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const user = (text: string) => ({ role: "user", content: [{ type: "text", text }] });
const toolUse = (id: string) => ({
  role: "assistant",
  content: [{ type: "tool_use", id, name: "Grep", input: {} }],
});
const toolResult = (id: string) => ({
  role: "user",
  content: [{ type: "tool_result", tool_use_id: id, content: "found" }],
});

/** An Anthropic request with these messages, as the AI SDK client sends one. */
const anthropic = (messages: unknown[]) => ({
  model: "m",
  max_tokens: 4096,
  system: [{ type: "text", text: "instructions" }],
  messages,
});

describe("the test server refuses what the Anthropic Messages API refuses", () => {
  it.each([
    ["no messages (only a system prompt)", [], "messages: at least one message is required"],
    [
      "a first message that is not the user's",
      [toolUse("t1"), toolResult("t1")],
      'messages: first message must use the "user" role',
    ],
    [
      "two user turns in a row",
      [user("a"), user("b")],
      'messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row',
    ],
    [
      "a tool_use the next message does not answer",
      [user("go"), toolUse("t1"), user("go on")],
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1.",
    ],
    [
      "a tool_result after text in its message",
      [
        user("go"),
        toolUse("t1"),
        { role: "user", content: [{ type: "text", text: "x" }, ...toolResult("t1").content] },
      ],
      "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1.",
    ],
    [
      "a tool_result answering no tool_use of the message before",
      [
        user("go"),
        { role: "assistant", content: [{ type: "text", text: "hm" }] },
        toolResult("t9"),
      ],
      "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: t9.",
    ],
    [
      "an empty assistant message before the last",
      [user("go"), { role: "assistant", content: [] }, user("go on")],
      "messages.1: all messages must have non-empty content except for the optional final assistant message",
    ],
    [
      "an empty text block",
      [{ role: "user", content: [{ type: "text", text: "" }] }],
      "messages: text content blocks must be non-empty",
    ],
    [
      "a message whose only text is blank",
      [user("go"), { role: "assistant", content: [{ type: "text", text: "\n\n" }] }, user("on")],
      "messages: text content blocks must contain non-whitespace text",
    ],
  ])("refuses %s with a 400 in Anthropic's error body", async (_, messages, message) => {
    const refused = await post("/v1/messages", anthropic(messages));
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: expect.stringContaining(message) },
    });
    expect(server?.requests[0]?.refused).toContain(message);
  });

  it("answers a conversation that keeps the rules, taking the script's reply", async () => {
    const answered = await post(
      "/v1/messages",
      anthropic([user("go"), toolUse("t1"), toolResult("t1")]),
    );
    expect(answered).toMatchObject({ status: 200, body: { content: [{ text: "ok" }] } });
  });

  it("takes no reply for a refused request: the next one gets it", async () => {
    await post("/v1/messages", anthropic([]));
    const answered = await post("/v1/messages", anthropic([user("go")]));
    expect(answered).toMatchObject({ status: 200, body: { content: [{ text: "ok" }] } });
  });
});

describe("the test server refuses what OpenAI's APIs refuse", () => {
  const call = (id: string) => ({
    role: "assistant",
    content: null,
    tool_calls: [{ id, type: "function", function: { name: "Grep", arguments: "{}" } }],
  });

  it.each([
    [
      "no messages",
      [],
      "Invalid 'messages': empty array. Expected an array with minimum length 1",
      "messages",
    ],
    [
      "a tool call no tool message answers",
      [{ role: "system", content: "s" }, call("c1"), { role: "user", content: "go on" }],
      "The following tool_call_ids did not have response messages: c1",
      "messages.[1].role",
    ],
    [
      "a tool message answering no call",
      [
        { role: "user", content: "go" },
        { role: "tool", tool_call_id: "c9", content: "x" },
      ],
      "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
      "messages.[1].role",
    ],
  ])("refuses %s on Chat Completions", async (_, messages, message, param) => {
    const refused = await post("/v1/chat/completions", { model: "m", messages });
    expect(refused).toEqual({
      status: 400,
      body: {
        error: {
          message: expect.stringContaining(message),
          type: "invalid_request_error",
          param,
          code: null,
        },
      },
    });
  });

  it.each([
    ["no input", [], "Invalid 'input': empty array"],
    [
      "a function call without its output",
      [
        { role: "user", content: [{ type: "input_text", text: "go" }] },
        { type: "function_call", call_id: "c1", name: "Grep", arguments: "{}" },
      ],
      "No tool output found for function call c1.",
    ],
    [
      "a function call output without its call",
      [{ type: "function_call_output", call_id: "c9", output: "x" }],
      "No tool call found for function call output with call_id c9.",
    ],
  ])("refuses %s on Responses", async (_, input, message) => {
    const refused = await post("/v1/responses", { model: "m", input });
    expect(refused).toMatchObject({
      status: 400,
      body: { error: { message: expect.stringContaining(message), param: "input" } },
    });
  });
});

describe("the test server streams when a request asks for it", () => {
  async function postStream(path: string, body: Record<string, unknown>, reply: ServerReply) {
    server = await startLlmServer([reply]);
    const response = await fetch(`${server.origin}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...body, stream: true }),
    });
    return { type: response.headers.get("content-type"), text: await response.text() };
  }
  const chat = { model: "m", messages: [{ role: "user", content: "go" }] };
  /** The JSON of each `data:` line of a chat completions stream, `[DONE]` as it is. */
  const dataOf = (text: string) =>
    text
      .split("\n\n")
      .filter((event) => event !== "")
      .map((event) => event.replace(/^data: /, ""))
      .map((data) => (data === "[DONE]" ? data : (JSON.parse(data) as Record<string, unknown>)));

  it("sends chat completion chunks, the usage last when stream_options asks for it, then [DONE]", async () => {
    const { type, text } = await postStream(
      "/v1/chat/completions",
      { ...chat, stream_options: { include_usage: true } },
      { text: "hello", usage: { input: 7, output: 2 } },
    );

    expect(type).toBe("text/event-stream");
    const chunks = dataOf(text);
    expect(chunks.at(-1)).toBe("[DONE]");
    expect(chunks.at(-2)).toMatchObject({
      object: "chat.completion.chunk",
      choices: [],
      usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 },
    });
    expect(chunks.slice(0, -2)).toEqual(
      Array(chunks.length - 2).fill(expect.objectContaining({ usage: null })),
    );
    expect(chunks.at(-3)).toMatchObject({ choices: [{ delta: {}, finish_reason: "stop" }] });
  });

  it("sends no usage in a chat completions stream that does not ask for it", async () => {
    const { text } = await postStream("/v1/chat/completions", chat, { text: "hello" });

    expect(text).not.toContain("usage");
    expect(dataOf(text).at(-1)).toBe("[DONE]");
  });

  it("numbers the events of a Responses stream in order, each named after its type", async () => {
    const { text } = await postStream(
      "/v1/responses",
      { model: "m", input: [{ role: "user", content: [{ type: "input_text", text: "go" }] }] },
      { toolCalls: [{ name: "Grep", args: { pattern: "auth" } }] },
    );

    const events = text
      .split("\n\n")
      .filter((event) => event !== "")
      .map((event) => {
        const [name, data] = event.split("\n");
        return { name: name?.replace("event: ", ""), data: JSON.parse(data?.slice(6) ?? "") };
      });
    expect(events.every(({ name, data }) => name === data.type)).toBe(true);
    expect(events.map(({ data }) => data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events.map(({ name }) => name)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      ...Array(5).fill("response.function_call_arguments.delta"),
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.completed",
    ]);
  });

  it("sends a raw body as it is, as an event stream", async () => {
    const raw = "data: {not json\n\n";
    expect(await postStream("/v1/chat/completions", chat, { body: raw })).toEqual({
      type: "text/event-stream",
      text: raw,
    });
  });
});
