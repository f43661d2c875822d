/**
 * What the real model APIs refuse of a request, with a 400 whose message is theirs: the test
 * server applies these so a conversation a real service would turn away fails here too. Each
 * check returns the first rule a request breaks, or undefined when it keeps them all.
 */
export interface Refusal {
  message: string;
  /** The request field at fault, as OpenAI's errors name it (`messages`, `input`, …). */
  param?: string;
}

type Json = Record<string, unknown>;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const records = (value: unknown): Json[] =>
  Array.isArray(value)
    ? value.filter((item): item is Json => typeof item === "object" && item !== null)
    : [];

const emptyArray = (param: string): Refusal => ({
  message: `Invalid '${param}': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
  param,
});

/** OpenAI Chat Completions: messages, and every tool call answered by a `tool` message. */
export function chatCompletionsRefusal(body: Json): Refusal | undefined {
  if (!Array.isArray(body.messages))
    return { message: "Missing required parameter: 'messages'.", param: "messages" };
  const messages = records(body.messages);
  if (messages.length === 0) return emptyArray("messages");
  for (const [i, message] of messages.entries()) {
    if (message.role === "assistant" && message.tool_calls !== undefined) {
      const calls = records(message.tool_calls);
      if (calls.length === 0) return emptyArray(`messages[${i}].tool_calls`);
      const answered = new Set<unknown>();
      for (const next of messages.slice(i + 1)) {
        if (next.role !== "tool") break;
        answered.add(next.tool_call_id);
      }
      const missing = calls.map((call) => call.id).filter((id) => !answered.has(id));
      if (missing.length > 0) {
        return {
          message: `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(", ")}`,
          param: `messages.[${i}].role`,
        };
      }
    }
    if (message.role === "tool") {
      const asked = messages
        .slice(0, i)
        .reverse()
        .find((earlier) => earlier.role !== "tool");
      const ids = records(asked?.tool_calls).map((call) => call.id);
      if (asked?.role !== "assistant" || !ids.includes(message.tool_call_id)) {
        return {
          message:
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          param: `messages.[${i}].role`,
        };
      }
    }
  }
  for (const [i, tool] of records(body.tools).entries()) {
    const name = (tool.function as Json | undefined)?.name;
    if (typeof name !== "string" || !TOOL_NAME.test(name)) {
      return {
        message: `Invalid 'tools[${i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        param: `tools[${i}].function.name`,
      };
    }
  }
  return undefined;
}

/**
 * Anthropic Messages: at least one message, the first a user's, user and assistant turns
 * alternating, none empty (but a final assistant one) nor with only blank text, and each
 * `tool_use` answered by a `tool_result` at the start of the very next message — which answers
 * nothing else.
 */
export function anthropicMessagesRefusal(body: Json): Refusal | undefined {
  if (typeof body.max_tokens !== "number") return { message: "max_tokens: Field required" };
  if (!Array.isArray(body.messages)) return { message: "messages: Field required" };
  const messages = records(body.messages);
  if (messages.length === 0) return { message: "messages: at least one message is required" };
  for (const [i, message] of messages.entries()) {
    if (message.role !== "user" && message.role !== "assistant")
      return { message: `messages.${i}.role: Input should be 'user' or 'assistant'` };
  }
  if (messages[0]?.role !== "user")
    return { message: 'messages: first message must use the "user" role' };
  for (const [i, message] of messages.entries()) {
    const role = String(message.role);
    if (i > 0 && messages[i - 1]?.role === role) {
      return {
        message: `messages: roles must alternate between "user" and "assistant", but found multiple "${role}" roles in a row`,
      };
    }
    const blocks = blocksOf(message);
    const last = i === messages.length - 1;
    if (blocks.length === 0 && !(last && role === "assistant")) {
      return {
        message: `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
      };
    }
    const texts = blocks.filter((block) => block.type === "text").map((block) => block.text);
    if (texts.includes("")) return { message: "messages: text content blocks must be non-empty" };
    if (texts.length > 0 && texts.every((text) => typeof text === "string" && text.trim() === ""))
      return { message: "messages: text content blocks must contain non-whitespace text" };
    for (const [j, block] of blocks.entries()) {
      if (block.type === "tool_result") {
        const asked = idsOf(messages[i - 1], "tool_use", "id");
        if (!asked.includes(block.tool_use_id)) {
          return {
            message: `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          };
        }
      }
    }
    const answered = leadingResults(messages[i + 1]);
    const unanswered = idsOf(message, "tool_use", "id").filter((id) => !answered.includes(id));
    if (unanswered.length > 0) {
      return {
        message: `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      };
    }
  }
  for (const [i, tool] of records(body.tools).entries()) {
    if (typeof tool.name !== "string" || !TOOL_NAME.test(tool.name))
      return {
        message: `tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`,
      };
    if ((tool.input_schema as Json | undefined)?.type !== "object")
      return { message: `tools.${i}.custom.input_schema.type: Input should be 'object'` };
  }
  return undefined;
}

/** A message's content as blocks: a string is one text block. */
const blocksOf = (message: Json): Json[] =>
  typeof message.content === "string"
    ? message.content === ""
      ? []
      : [{ type: "text", text: message.content }]
    : records(message.content);

/** The ids a message's leading `tool_result` blocks answer: results must come before any text. */
function leadingResults(message: Json | undefined): unknown[] {
  const blocks = message === undefined ? [] : blocksOf(message);
  const firstOther = blocks.findIndex((block) => block.type !== "tool_result");
  return blocks.slice(0, firstOther === -1 ? undefined : firstOther).map((b) => b.tool_use_id);
}

const idsOf = (message: Json | undefined, type: string, field: string): unknown[] =>
  message === undefined
    ? []
    : blocksOf(message)
        .filter((block) => block.type === type)
        .map((block) => block[field]);

/**
 * OpenAI Responses: some input, and every `function_call` item matched by a
 * `function_call_output` of its `call_id` (and none without its call).
 */
export function responsesRefusal(body: Json): Refusal | undefined {
  if (body.input === undefined)
    return { message: "Missing required parameter: 'input'.", param: "input" };
  if (typeof body.input === "string") return undefined;
  const items = records(body.input);
  if (items.length === 0) return emptyArray("input");
  const called = new Set<unknown>();
  for (const item of items) {
    if (item.type === "function_call") called.add(item.call_id);
    if (item.type === "function_call_output" && !called.has(item.call_id)) {
      return {
        message: `No tool call found for function call output with call_id ${String(item.call_id)}.`,
        param: "input",
      };
    }
  }
  const answered = new Set(
    items.filter((item) => item.type === "function_call_output").map((item) => item.call_id),
  );
  const unanswered = [...called].find((id) => !answered.has(id));
  if (unanswered !== undefined)
    return {
      message: `No tool output found for function call ${String(unanswered)}.`,
      param: "input",
    };
  for (const [i, tool] of records(body.tools).entries()) {
    if (tool.type === "function" && (typeof tool.name !== "string" || !TOOL_NAME.test(tool.name))) {
      return {
        message: `Invalid 'tools[${i}].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
        param: `tools[${i}].name`,
      };
    }
  }
  return undefined;
}
