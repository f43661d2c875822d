import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import protobuf from "protobufjs";

/** A span as a trace backend would show it: ids in hex, times in ms, attributes as values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Absent on a root span. */
  parentSpanId?: string;
  name: string;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  status: { code: "unset" | "ok" | "error"; message: string };
  /** The resource's attributes (`service.name`, …). */
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** The OTLP/HTTP base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`); traces go to `/v1/traces`. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Each export request's content type and body, as sent. */
  requests: { contentType: string; body: Buffer }[];
  /** Resolves once `count` spans matching `test` arrived; rejects after `timeoutMs`. */
  waitFor(test: (span: ReceivedSpan) => boolean, count?: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const root = protobuf.loadSync(join(import.meta.dirname, "trace.proto"));
const ExportRequest = root.lookupType("otlp.ExportTraceServiceRequest");
const ExportResponse = root.lookupType("otlp.ExportTraceServiceResponse");

const STATUS = ["unset", "ok", "error"] as const;

/**
 * An OTLP/HTTP trace receiver on a free local port: it takes export requests in both encodings
 * the specification defines (binary protobuf, decoded with the OTLP definitions, and JSON) and
 * answers as a collector does.
 */
export async function otlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver["requests"] = [];
  const listeners = new Set<() => void>();
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const contentType = request.headers["content-type"] ?? "";
    requests.push({ contentType, body });
    if (request.method !== "POST" || request.url !== "/v1/traces") {
      response.writeHead(404).end();
      return;
    }
    const protobufBody = contentType.startsWith("application/x-protobuf");
    const decoded = protobufBody
      ? ExportRequest.toObject(ExportRequest.decode(body), {
          longs: String,
          enums: Number,
          bytes: String,
          defaults: false,
        })
      : JSON.parse(body.toString("utf8"));
    spans.push(...spansOf(decoded, protobufBody));
    for (const listener of listeners) listener();
    if (protobufBody) {
      response.writeHead(200, { "content-type": "application/x-protobuf" });
      response.end(Buffer.from(ExportResponse.encode(ExportResponse.create({})).finish()));
    } else {
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    requests,
    waitFor: (test, count = 1, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (spans.filter(test).length < count) return false;
          clearTimeout(timer);
          listeners.delete(listener);
          resolve();
          return true;
        };
        const listener = () => void check();
        const timer = setTimeout(() => {
          listeners.delete(listener);
          reject(new Error(`${count} matching span(s) did not arrive in ${timeoutMs} ms`));
        }, timeoutMs);
        listeners.add(listener);
        check();
      }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: a decoded OTLP message, walked field by field as the specification names them
type Json = Record<string, any>;

/** Protobuf's bytes came as base64; JSON's ids are hex already. */
const idOf = (value: unknown, protobufBody: boolean): string =>
  typeof value !== "string" || value === ""
    ? ""
    : protobufBody
      ? Buffer.from(value, "base64").toString("hex")
      : value.toLowerCase();

function anyValueOf(any: Json | undefined): unknown {
  if (!any) return undefined;
  if ("stringValue" in any) return any.stringValue;
  if ("boolValue" in any) return any.boolValue;
  if ("intValue" in any) return Number(any.intValue);
  if ("doubleValue" in any) return Number(any.doubleValue);
  if ("arrayValue" in any) return (any.arrayValue.values ?? []).map(anyValueOf);
  if ("kvlistValue" in any) return attributesOf(any.kvlistValue.values);
  return undefined;
}

const attributesOf = (list: Json[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, anyValueOf(kv.value)]));

const msOf = (nanos: unknown) => Number(BigInt(String(nanos ?? 0)) / 1_000_000n);

function spansOf(request: Json, protobufBody: boolean): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? [])
      for (const span of scopeSpans.spans ?? []) {
        const parent = idOf(span.parentSpanId, protobufBody);
        out.push({
          traceId: idOf(span.traceId, protobufBody),
          spanId: idOf(span.spanId, protobufBody),
          ...(parent && { parentSpanId: parent }),
          name: span.name,
          startMs: msOf(span.startTimeUnixNano),
          endMs: msOf(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          events: (span.events ?? []).map((event: Json) => ({
            name: event.name,
            attributes: attributesOf(event.attributes),
          })),
          links: (span.links ?? []).map((link: Json) => ({
            traceId: idOf(link.traceId, protobufBody),
            spanId: idOf(link.spanId, protobufBody),
            attributes: attributesOf(link.attributes),
          })),
          status: {
            code: STATUS[Number(span.status?.code ?? 0)] ?? "unset",
            message: span.status?.message ?? "",
          },
          resource,
        });
      }
  }
  return out;
}
