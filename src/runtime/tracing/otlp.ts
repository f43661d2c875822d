import type { Span, Tracer } from "@opentelemetry/api";
import type { IdGenerator, SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace";
import { err, ok, type Result, StagechartError } from "../../errors.js";
import { VERSION } from "../../version.js";
import type { SpanIdPins, Tracing } from "./run-spans.js";

// OpenTelemetry is imported when tracing is asked for, not with stagechart: its SDK and exporter
// take longer to load than a `validate` takes to run.

export interface TracingOptions {
  /**
   * Where spans go: an OTLP/HTTP endpoint's traces URL (`http://localhost:4318/v1/traces`).
   * Unset, the exporter reads the standard `OTEL_EXPORTER_OTLP_*` variables.
   */
  url?: string;
  /** `http/protobuf` (the default, as the OTLP specification has it) or `http/json`. */
  protocol?: "http/protobuf" | "http/json";
  /** Headers sent with every export (an API key for a hosted backend, say). */
  headers?: Record<string, string>;
  /** Export model replies, tool arguments, questions and answers too (off by default). */
  content?: boolean;
  /** Instead of the OTLP exporter: where spans go (an in-memory exporter in a test, say). */
  exporter?: SpanExporter;
  /** Instead of a batching processor over `exporter`: the span processors to use. */
  spanProcessors?: SpanProcessor[];
}

/**
 * An id generator that hands out the ids a span is to take, once, and random ones otherwise:
 * how a run's spans keep the trace id its run id gives, through the SDK's public configuration.
 */
function pinnedIds(random: IdGenerator): IdGenerator & SpanIdPins {
  let pinned: { traceId: string; spanId: string } | undefined;
  return {
    generateTraceId: () => pinned?.traceId ?? random.generateTraceId(),
    generateSpanId: () => pinned?.spanId ?? random.generateSpanId(),
    startPinned(ids: { traceId: string; spanId: string }, start: () => Span): Span {
      pinned = ids;
      try {
        return start();
      } finally {
        pinned = undefined;
      }
    },
  };
}

/**
 * OpenTelemetry tracing for a host (`createHost({tracing})`): a tracer provider of its own, with
 * the `service.name` stagechart (or `OTEL_SERVICE_NAME`), batching spans to an OTLP/HTTP
 * endpoint. Call `shutdown()` before the process exits, or spans not yet sent are lost.
 */
export async function createTracing(options: TracingOptions = {}): Promise<Tracing> {
  const [sdk, resources, { tracingOf }] = await Promise.all([
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/resources"),
    import("./run-spans.js"),
  ]);
  const pins = pinnedIds(new sdk.RandomIdGenerator());
  const provider = new sdk.TracerProvider({
    resource: resources
      .defaultResource()
      .merge(
        resources.resourceFromAttributes({
          "service.name": "stagechart",
          "service.version": VERSION,
        }),
      )
      .merge(resources.detectResources({ detectors: [resources.envDetector] })),
    idGenerator: pins,
    spanProcessors: options.spanProcessors ?? [
      new sdk.BatchSpanProcessor({ exporter: options.exporter ?? (await otlpExporter(options)) }),
    ],
  });
  const tracer = provider.getTracer("stagechart", VERSION);
  return tracingOf({ tracer, content: options.content ?? false, pins }, provider);
}

async function otlpExporter({ url, protocol, headers }: TracingOptions): Promise<SpanExporter> {
  const config = { ...(url !== undefined && { url }), ...(headers && { headers }) };
  return protocol === "http/json"
    ? new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter(config)
    : new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter(config);
}

/**
 * Tracing as the standard OpenTelemetry variables ask for it, or undefined when they do not:
 * on when `OTEL_TRACES_EXPORTER` names `otlp` or an OTLP endpoint is set, off when
 * `OTEL_SDK_DISABLED` is true or `OTEL_TRACES_EXPORTER` is `none`. `Validation/TracingInvalid`
 * for a protocol or exporter stagechart cannot send with.
 */
export async function tracingFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  { content = false }: { content?: boolean } = {},
): Promise<Result<Tracing | undefined>> {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return ok(undefined);
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (exporters.includes("none")) return ok(undefined);
  const unknown = exporters.filter((name) => name !== "otlp");
  if (unknown.length > 0)
    return err(
      new StagechartError(
        "Validation/TracingInvalid",
        `OTEL_TRACES_EXPORTER names ${unknown.join(", ")}: stagechart exports traces with otlp only`,
        { exporters: unknown },
      ),
    );
  if (exporters.length === 0 && !endpoint?.trim()) return ok(undefined);
  const protocol =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() ||
    "http/protobuf";
  if (protocol !== "http/protobuf" && protocol !== "http/json")
    return err(
      new StagechartError(
        "Validation/TracingInvalid",
        `the OTLP protocol ${protocol} is not one stagechart sends: use http/protobuf or http/json`,
        { protocol },
      ),
    );
  return ok(await createTracing({ protocol, content }));
}

/**
 * Tracing through a tracer of the app's own OpenTelemetry setup (`trace.getTracer(…)`, say):
 * spans go wherever its provider sends them. Its ids are its own, so a run's first span is not
 * the root its resumes hang under: every session of the run is a child of the root context its
 * run id gives, which keeps one trace per run.
 */
export async function tracingWith(
  tracer: Tracer,
  { content = false }: { content?: boolean } = {},
): Promise<Tracing> {
  const { tracingOf } = await import("./run-spans.js");
  return tracingOf({ tracer, content }, { forceFlush: async () => {}, shutdown: async () => {} });
}
