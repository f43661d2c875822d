import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { StagechartError } from "../errors.js";

/** What the inspect server reads of a request and how it answers one: bodies, JSON, and its checks. */

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);
export const isLoopback = (host: string): boolean => LOOPBACK.has(host);

export function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The most of a request body the server reads. */
export const MAX_BODY_BYTES = 64 * 1024;

/** A request's body as text; undefined past `MAX_BODY_BYTES`. */
export async function readText(request: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString();
}

/** A path part decoded; one that is not valid percent-encoding is kept as it came. */
export function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    ...headers,
  });
  response.end(JSON.stringify(body));
}

export const unauthorized = () => ({
  error: new StagechartError(
    "Validation/ApiTokenMissing",
    "refused: this API needs the access token, as Authorization: Bearer <token>",
  ).toModelView(),
});

export const forbidden = () => ({
  error: new StagechartError(
    "Validation/InspectForbidden",
    "refused: wrong host, another site's page, or a missing access token",
  ).toModelView(),
});

/** On loopback, only loopback names: a DNS-rebound name cannot reach the API. */
export function hostAllowed(request: IncomingMessage, host: string): boolean {
  if (!isLoopback(host)) return true;
  const name = (request.headers.host ?? "").replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
  return LOOPBACK.has(name);
}

/** A browser page of another site may not drive this one (grant answers, live news). */
export function originAllowed(request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  return origin === undefined || origin === `http://${request.headers.host}`;
}

export function tokenAllowed(request: IncomingMessage, token: string | undefined): boolean {
  if (!token) return true;
  const url = new URL(request.url ?? "/", "http://x");
  const cookie = /(?:^|;\s*)stagechart_token=([^;]+)/.exec(request.headers.cookie ?? "")?.[1];
  const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? "")?.[1];
  const given =
    bearer ??
    url.searchParams.get("token") ??
    (request.headers["x-stagechart-token"] as string | undefined) ??
    cookie;
  if (!given || given.length !== token.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(token));
}
