import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One answer of the test server, in whichever wire format the request arrived in. */
export type ServerReply = (
  | { toolCalls: { name: string; args: unknown }[] }
  /** Tool calls whose arguments are sent exactly as given, valid JSON or not (OpenAI format). */
  | { rawToolCalls: { name: string; arguments: string }[] }
  | { text: string }
  /** An error in the format's own body; `type` defaults to what the status usually carries. */
  | { status: number; message: string; type?: string; headers?: Record<string, string> }
  /** Never answers: the request stays open until the client gives up. */
  | { hold: true }
  /** A 200 whose body is exactly this text, whatever the format: garbled JSON, say. */
  | { body: string }
) & {
  delayMs?: number;
  usage?: { input: number; output: number };
  /**
   * The headers at once, then the body in eight pieces, one every `trickleMs`: a server that is
   * slow but never quite silent for longer than that.
   */
  trickleMs?: number;
};

export interface ReceivedRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
  /** The client closed the connection before the reply was sent. */
  aborted: boolean;
}

export interface LlmServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  requests: ReceivedRequest[];
  /** Resolves once `count` requests have arrived. */
  received(count: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A local model server on 127.0.0.1 (port 0) for the real AI SDK provider clients. It speaks
 * OpenAI chat completions (`POST …/chat/completions`) and Anthropic messages
 * (`POST …/messages`), without streaming, answering each request with the script's next reply.
 * A request after the script's end gets a 400, so a test that asks too often fails loudly.
 */
export async function startLlmServer(script: readonly ServerReply[]): Promise<LlmServer> {
  const requests: ReceivedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  let next = 0;
  let callIds = 0;

  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as Record<string, unknown>;
    const request: ReceivedRequest = {
      path: req.url ?? "",
      headers: req.headers,
      body,
      aborted: false,
    };
    requests.push(request);
    res.on("close", () => {
      if (!res.writableFinished) request.aborted = true;
    });
    for (const waiter of waiters.filter((w) => requests.length >= w.count)) waiter.resolve();
    const reply = script[next++] ?? { status: 400, message: "test server: the script has ended" };
    if (reply.delayMs) await sleep(reply.delayMs);
    if ("hold" in reply || res.destroyed) return;
    const format = request.path.endsWith("/messages") ? anthropic : openai;
    const ids = () => `call_${++callIds}`;
    if ("status" in reply) return send(res, reply.status, format.error(reply), reply.headers);
    const text =
      "body" in reply ? reply.body : JSON.stringify(format.reply(reply, String(body.model), ids));
    if (reply.trickleMs) return trickle(res, text, reply.trickleMs);
    sendText(res, text);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    received: (count) =>
      requests.length >= count
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ count, resolve })),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

type Answer = Exclude<ServerReply, { status: number } | { hold: true } | { body: string }>;

interface WireFormat {
  reply(reply: Answer, model: string, nextId: () => string): unknown;
  error(reply: { status: number; message: string; type?: string }): unknown;
}

const usageOf = (reply: Answer) => reply.usage ?? { input: 120, output: 30 };

const openai: WireFormat = {
  reply(reply, model, nextId) {
    const calls =
      "toolCalls" in reply
        ? reply.toolCalls.map((c) => ({ name: c.name, arguments: JSON.stringify(c.args) }))
        : "rawToolCalls" in reply
          ? reply.rawToolCalls
          : [];
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
            content: "text" in reply ? reply.text : null,
            ...(calls.length > 0 && {
              tool_calls: calls.map((fn) => ({ id: nextId(), type: "function", function: fn })),
            }),
          },
          finish_reason: calls.length > 0 ? "tool_calls" : "stop",
        },
      ],
      usage: {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.input + usage.output,
      },
    };
  },
  error: ({ status, message, type }) => ({
    error: { message, type: type ?? errorType(status, OPENAI_ERRORS), code: null },
  }),
};

const anthropic: WireFormat = {
  reply(reply, model, nextId) {
    const content =
      "toolCalls" in reply
        ? reply.toolCalls.map((c) => ({
            type: "tool_use",
            id: nextId(),
            name: c.name,
            input: c.args,
          }))
        : "rawToolCalls" in reply
          ? reply.rawToolCalls.map((c) => ({
              type: "tool_use",
              id: nextId(),
              name: c.name,
              input: JSON.parse(c.arguments),
            }))
          : [{ type: "text", text: reply.text }];
    const usage = usageOf(reply);
    return {
      id: "msg_test",
      type: "message",
      role: "assistant",
      model,
      content,
      stop_reason: "text" in reply ? "end_turn" : "tool_use",
      stop_sequence: null,
      usage: { input_tokens: usage.input, output_tokens: usage.output },
    };
  },
  error: ({ status, message, type }) => ({
    type: "error",
    error: { type: type ?? errorType(status, ANTHROPIC_ERRORS), message },
  }),
};

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

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  sendText(res, JSON.stringify(body), status, headers);
}

function sendText(
  res: ServerResponse,
  text: string,
  status = 200,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(text);
}

/** `text` in eight pieces, `everyMs` apart, the first `everyMs` after the headers. */
async function trickle(res: ServerResponse, text: string, everyMs: number): Promise<void> {
  res.writeHead(200, { "content-type": "application/json" });
  res.flushHeaders();
  const size = Math.ceil(text.length / 8);
  for (let start = 0; start < text.length; start += size) {
    await sleep(everyMs);
    if (res.destroyed) return;
    res.write(text.slice(start, start + size));
  }
  res.end();
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
