import {
  type Answer,
  anthropicMessages,
  callsOf,
  chatCompletions,
  responses,
  textOf,
  usageOf,
  type WireFormat,
} from "./llm-wire-formats.js";

/**
 * How a wire format answers a request that asks for a stream (`"stream": true`): the reply as
 * the server-sent events the real API sends, each one already framed (`data: …` and the blank
 * line after it). Text and tool-call arguments come in pieces of a few characters, so a client
 * sees several deltas of each part.
 */
export type StreamFormat = (
  reply: Answer,
  model: string,
  nextId: () => number,
  request: Record<string, unknown>,
) => string[];

/** The characters a text or arguments delta carries; longer texts come in at most 64 pieces. */
const PIECE = 4;
const MOST_PIECES = 64;

/** `text` in pieces of a few characters, never splitting a character; `[]` for `""`. */
function piecesOf(text: string): string[] {
  const chars = Array.from(text);
  const size = Math.max(PIECE, Math.ceil(chars.length / MOST_PIECES));
  const pieces: string[] = [];
  for (let start = 0; start < chars.length; start += size) {
    pieces.push(chars.slice(start, start + size).join(""));
  }
  return pieces;
}

const dataEvent = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

/** An event of the APIs that name each event after its `type`. */
type NamedEvent = { type: string } & Record<string, unknown>;

const namedEvent = (data: NamedEvent) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

interface ChatMessage {
  content: string | null;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
}

/**
 * OpenAI Chat Completions: `chat.completion.chunk`s, the first with the role, then content
 * deltas, each call opened with its id and name and its arguments in pieces, a chunk with the
 * finish reason, the usage in a chunk without choices when `stream_options.include_usage` asks
 * for it (every chunk then carries `usage: null`), and `data: [DONE]`.
 */
const chatCompletionsStream: StreamFormat = (reply, model, nextId, request) => {
  const whole = chatCompletions.reply(reply, model, nextId) as {
    id: string;
    created: number;
    choices: [{ message: ChatMessage; finish_reason: string }];
    usage: unknown;
  };
  const [{ message, finish_reason }] = whole.choices;
  const includeUsage =
    (request.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    dataEvent({
      id: whole.id,
      object: "chat.completion.chunk",
      created: whole.created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage && { usage: null }),
    });
  const calls = message.tool_calls ?? [];
  return [
    chunk({ role: "assistant", content: message.content === null ? null : "", refusal: null }),
    ...piecesOf(message.content ?? "").map((content) => chunk({ content })),
    ...calls.flatMap((call, index) => [
      chunk({
        tool_calls: [
          { index, id: call.id, type: "function", function: { ...call.function, arguments: "" } },
        ],
      }),
      ...piecesOf(call.function.arguments).map((args) =>
        chunk({ tool_calls: [{ index, function: { arguments: args } }] }),
      ),
    ]),
    chunk({}, finish_reason),
    ...(includeUsage
      ? [
          dataEvent({
            id: whole.id,
            object: "chat.completion.chunk",
            created: whole.created,
            model,
            choices: [],
            usage: whole.usage,
          }),
        ]
      : []),
    "data: [DONE]\n\n",
  ];
};

type ResponseItem = Record<string, unknown> & { type: string; id: string };

/**
 * OpenAI Responses: `response.created` and `response.in_progress`, each output item added, its
 * text or arguments in deltas and done, then `response.completed` with the whole response and its
 * usage. Every event has its `sequence_number`.
 */
const responsesStream: StreamFormat = (reply, model, nextId) => {
  const whole = responses.reply(reply, model, nextId) as Record<string, unknown> & {
    output: ResponseItem[];
  };
  const events: NamedEvent[] = [];
  const emit = (type: string, fields: Record<string, unknown>) => events.push({ type, ...fields });
  const started = { ...whole, status: "in_progress", output: [], usage: null };
  emit("response.created", { response: started });
  emit("response.in_progress", { response: started });
  whole.output.forEach((item, output_index) => {
    const at = { item_id: item.id, output_index };
    if (item.type === "message") {
      emit("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", content: [] },
      });
      (item.content as { text: string }[]).forEach((part, content_index) => {
        const empty = { ...part, text: "" };
        emit("response.content_part.added", { ...at, content_index, part: empty });
        for (const delta of piecesOf(part.text)) {
          emit("response.output_text.delta", { ...at, content_index, delta, logprobs: [] });
        }
        emit("response.output_text.done", { ...at, content_index, text: part.text, logprobs: [] });
        emit("response.content_part.done", { ...at, content_index, part });
      });
    } else {
      const args = String(item.arguments);
      emit("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", arguments: "" },
      });
      for (const delta of piecesOf(args)) {
        emit("response.function_call_arguments.delta", { ...at, delta });
      }
      emit("response.function_call_arguments.done", { ...at, arguments: args });
    }
    emit("response.output_item.done", { output_index, item: { ...item, status: "completed" } });
  });
  emit("response.completed", { response: whole });
  return events.map((event, sequence_number) => namedEvent({ ...event, sequence_number }));
};

/**
 * Anthropic Messages: `message_start` with the input tokens, a `ping`, each content block started,
 * its text or input JSON in deltas and stopped, `message_delta` with the stop reason and the
 * output tokens, `message_stop`. A tool's input streams as the text it was given, so arguments
 * that are not JSON reach the client as they would from a model that wrote them.
 */
const anthropicMessagesStream: StreamFormat = (reply, model, nextId) => {
  const usage = usageOf(reply);
  const text = textOf(reply);
  const calls = callsOf(reply);
  const blocks = [
    ...(text === "" ? [] : [{ start: { type: "text", text: "" }, deltas: textDeltas(text) }]),
    ...calls.map((call) => ({
      start: { type: "tool_use", id: `toolu_${nextId()}`, name: call.name, input: {} },
      deltas: piecesOf(call.arguments).map((partial_json) => ({
        type: "input_json_delta",
        partial_json,
      })),
    })),
  ];
  const message = {
    id: "msg_test",
    type: "message",
    role: "assistant",
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: 1 },
  };
  const events: NamedEvent[] = [
    { type: "message_start", message },
    { type: "ping" },
    ...blocks.flatMap(({ start, deltas }, index) => [
      { type: "content_block_start", index, content_block: start },
      ...deltas.map((delta) => ({ type: "content_block_delta", index, delta })),
      { type: "content_block_stop", index },
    ]),
    {
      type: "message_delta",
      delta: { stop_reason: calls.length > 0 ? "tool_use" : "end_turn", stop_sequence: null },
      usage: { output_tokens: usage.output },
    },
    { type: "message_stop" },
  ];
  return events.map(namedEvent);
};

const textDeltas = (text: string) =>
  piecesOf(text).map((piece) => ({ type: "text_delta", text: piece }));

const STREAMS = new Map<WireFormat, StreamFormat>([
  [chatCompletions, chatCompletionsStream],
  [responses, responsesStream],
  [anthropicMessages, anthropicMessagesStream],
]);

/** The stream format of a wire format. */
export const streamOf = (format: WireFormat): StreamFormat =>
  STREAMS.get(format) ?? chatCompletionsStream;
