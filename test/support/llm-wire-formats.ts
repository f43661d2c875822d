import {
  anthropicMessagesRefusal,
  chatCompletionsRefusal,
  type Refusal,
  responsesRefusal,
} from "./llm-request-rules.js";

/**
 * A reply the test server answers with: tool calls, with text before them or not, or text alone
 * (`""` for an empty reply).
 */
export type Answer = (
  | { toolCalls: { name: string; args: unknown }[]; text?: string }
  /** Tool calls whose arguments are sent exactly as given, valid JSON or not. */
  | { rawToolCalls: { name: string; arguments: string }[]; text?: string }
  | { text: string }
) & {
  /** Tokens the reply reports; `cachedInput` of the input read from the prompt cache. */
  usage?: { input: number; output: number; cachedInput?: number };
};

export interface ErrorReply {
  status: number;
  message: string;
  type?: string;
  param?: string;
}

/** One wire format the test server speaks: what it refuses, and how it answers. */
export interface WireFormat {
  refusal(body: Record<string, unknown>): Refusal | undefined;
  reply(reply: Answer, model: string, nextId: () => number): unknown;
  error(reply: ErrorReply): unknown;
}

export const usageOf = (reply: Answer) => reply.usage ?? { input: 120, output: 30 };

/** The text of a reply, `""` when it has none. */
export const textOf = (reply: Answer): string => reply.text ?? "";

/** The calls of a reply, arguments as JSON text. */
export const callsOf = (reply: Answer): { name: string; arguments: string }[] =>
  "toolCalls" in reply
    ? reply.toolCalls.map((c) => ({ name: c.name, arguments: JSON.stringify(c.args) }))
    : "rawToolCalls" in reply
      ? reply.rawToolCalls
      : [];

const openaiError = ({ status, message, type, param }: ErrorReply) => ({
  error: {
    message,
    type: type ?? errorType(status, OPENAI_ERRORS),
    param: param ?? null,
    code: null,
  },
});

/** OpenAI Chat Completions (`POST …/chat/completions`). */
export const chatCompletions: WireFormat = {
  refusal: chatCompletionsRefusal,
  reply(reply, model, nextId) {
    const calls = callsOf(reply);
    const usage = usageOf(reply);
    return {
      id: "chatcmpl-test",
      object: "chat.completion",
      created: 1_700_000_000,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: calls.length > 0 && !reply.text ? null : textOf(reply),
            ...(calls.length > 0 && {
              tool_calls: calls.map((fn) => ({
                id: `call_${nextId()}`,
                type: "function",
                function: fn,
              })),
            }),
          },
          finish_reason: calls.length > 0 ? "tool_calls" : "stop",
        },
      ],
      usage: {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.input + usage.output,
        ...(usage.cachedInput !== undefined && {
          prompt_tokens_details: { cached_tokens: usage.cachedInput },
        }),
      },
    };
  },
  error: openaiError,
};

/** Anthropic Messages (`POST …/messages`); an empty reply has no content blocks, as Claude's. */
export const anthropicMessages: WireFormat = {
  refusal: anthropicMessagesRefusal,
  reply(reply, model, nextId) {
    const calls = callsOf(reply);
    const content = [
      ...(textOf(reply) === "" ? [] : [{ type: "text", text: textOf(reply) }]),
      ...calls.map((c) => ({
        type: "tool_use",
        id: `toolu_${nextId()}`,
        name: c.name,
        input: JSON.parse(c.arguments),
      })),
    ];
    const usage = usageOf(reply);
    return {
      id: "msg_test",
      type: "message",
      role: "assistant",
      model,
      content,
      stop_reason: calls.length > 0 ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: { input_tokens: usage.input, output_tokens: usage.output },
    };
  },
  error: ({ status, message, type }) => ({
    type: "error",
    error: { type: type ?? errorType(status, ANTHROPIC_ERRORS), message },
  }),
};

/** OpenAI Responses (`POST …/responses`): output items, a message or function calls. */
export const responses: WireFormat = {
  refusal: responsesRefusal,
  reply(reply, model, nextId) {
    const calls = callsOf(reply);
    const usage = usageOf(reply);
    const message = {
      type: "message",
      id: `msg_${nextId()}`,
      status: "completed",
      role: "assistant",
      content:
        textOf(reply) === "" ? [] : [{ type: "output_text", text: textOf(reply), annotations: [] }],
    };
    const output = [
      ...(calls.length === 0 || textOf(reply) !== "" ? [message] : []),
      ...calls.map((fn) => {
        const id = nextId();
        return { type: "function_call", id: `fc_${id}`, call_id: `call_${id}`, ...fn };
      }),
    ];
    return {
      id: "resp_test",
      object: "response",
      created_at: 1_700_000_000,
      status: "completed",
      model,
      output,
      error: null,
      incomplete_details: null,
      usage: {
        input_tokens: usage.input,
        input_tokens_details: { cached_tokens: usage.cachedInput ?? 0 },
        output_tokens: usage.output,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.input + usage.output,
      },
    };
  },
  error: openaiError,
};

/** The wire format a request path speaks. */
export const formatOf = (path: string): WireFormat =>
  path.endsWith("/messages")
    ? anthropicMessages
    : path.endsWith("/responses")
      ? responses
      : chatCompletions;

const OPENAI_ERRORS = {
  400: "invalid_request_error",
  429: "rate_limit_exceeded",
  5: "server_error",
};
const ANTHROPIC_ERRORS = {
  400: "invalid_request_error",
  429: "rate_limit_error",
  529: "overloaded_error",
  5: "api_error",
};
/** The error type of a status: its own, else its class's (`5` for any 5xx), else a 4xx's. */
const errorType = (status: number, types: Record<number, string>) =>
  types[status] ?? (status >= 500 ? types[5] : types[400]);
