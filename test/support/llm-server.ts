import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Answer, type ErrorReply, formatOf } from "./llm-wire-formats.js";
import { streamOf } from "./llm-wire-streams.js";

/** One answer of the test server, in whichever wire format the request arrived in. */
export type ServerReply = (
  | Answer
  /** An error in the format's own body; `type` defaults to what the status usually carries. */
  | (ErrorReply & { headers?: Record<string, string> })
  /** Never answers: the request stays open until the client gives up. */
  | { hold: true }
  /**
   * A 200 whose body is exactly this text, whatever the format: garbled JSON, say, or hand-made
   * events (sent as `text/event-stream` when the request asks for a stream).
   */
  | { body: string }
) & {
  delayMs?: number;
  /**
   * The headers at once, then the body in eight pieces, one every `trickleMs` — or, for a request
   * that asks for a stream, one event every `trickleMs`: a server that is slow but never quite
   * silent for longer than that.
   */
  trickleMs?: number;
};

export interface ReceivedRequest {
  path: string;
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
  /** The client closed the connection before the reply was sent. */
  aborted: boolean;
  /** Why the server refused the request as the real API would (400), taking no reply for it. */
  refused?: string;
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
 * OpenAI chat completions (`POST …/chat/completions`), OpenAI responses (`POST …/responses`)
 * and Anthropic messages (`POST …/messages`), answering each request with the script's next
 * reply: as one JSON body, or, when the request asks for a stream (`"stream": true`), as that
 * API's server-sent events (errors are answered unstreamed, as the real APIs answer them). A
 * request the real API would refuse — no messages, a conversation
 * Anthropic does not take, a tool call left unanswered — gets that API's 400 instead, without
 * taking a reply. A request after the script's end gets a 400, so a test that asks too often
 * fails loudly.
 */
export async function startLlmServer(script: readonly ServerReply[]): Promise<LlmServer> {
  const requests: ReceivedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  let next = 0;
  let callIds = 0;
  const nextId = () => ++callIds;

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
    const format = formatOf(request.path);
    const refusal = format.refusal(body);
    if (refusal) {
      request.refused = refusal.message;
      return send(res, 400, format.error({ status: 400, ...refusal }));
    }
    const reply = script[next++] ?? { status: 400, message: "test server: the script has ended" };
    if (reply.delayMs) await sleep(reply.delayMs);
    if ("hold" in reply || res.destroyed) return;
    if ("status" in reply) return send(res, reply.status, format.error(reply), reply.headers);
    const streamed = body.stream === true;
    const model = String(body.model);
    const pieces =
      "body" in reply
        ? splitInEight(reply.body)
        : streamed
          ? streamOf(format)(reply, model, nextId, body)
          : splitInEight(JSON.stringify(format.reply(reply, model, nextId)));
    return sendPieces(res, streamed ? EVENT_STREAM : JSON_BODY, pieces, reply.trickleMs);
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

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  sendText(res, JSON.stringify(body), status, headers);
}

const JSON_BODY = { "content-type": "application/json" };
const EVENT_STREAM = { "content-type": "text/event-stream", "cache-control": "no-cache" };

function sendText(
  res: ServerResponse,
  text: string,
  status = 200,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { ...JSON_BODY, ...headers });
  res.end(text);
}

/**
 * A 200 whose body is `pieces`: all at once, or with `everyMs` the headers at once and then one
 * piece every `everyMs`, the first `everyMs` after the headers.
 */
async function sendPieces(
  res: ServerResponse,
  headers: Record<string, string>,
  pieces: string[],
  everyMs: number | undefined,
): Promise<void> {
  res.writeHead(200, headers);
  if (!everyMs) return void res.end(pieces.join(""));
  res.flushHeaders();
  for (const piece of pieces) {
    await sleep(everyMs);
    if (res.destroyed) return;
    res.write(piece);
  }
  res.end();
}

/** `text` in eight pieces (fewer when it is shorter than eight characters). */
function splitInEight(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 8));
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size)
    pieces.push(text.slice(start, start + size));
  return pieces;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
