import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { createActor, setup, toPromise } from "xstate";
import { compilePipeline, startRun } from "../../../src/runtime/run.js";
import { createTracing, tracingWith } from "../../../src/runtime/tracing/otlp.js";
import { runTraceIds } from "../../../src/runtime/tracing/run-spans.js";
import { CODE_REVIEW_SCRIPT, llm, pipelineOf } from "../../support/pipelines.js";
import { harness } from "../../support/stage-harness.js";

const codeReview = () =>
  pipelineOf({
    id: "code-review",
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe("the spans of a run on a host with tracing", () => {
  it("come from a pipeline embedded in another app's machine, under the run id's trace", async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = await createTracing({
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    const h = harness(CODE_REVIEW_SCRIPT, { tracing });
    const app = setup({ actors: { review: compilePipeline(codeReview(), h.host) } }).createMachine({
      invoke: {
        src: "review",
        input: { runId: "embedded-1", ctx: { task: "t" } },
        onDone: ".done",
      },
      initial: "working",
      states: { working: {}, done: { type: "final" } },
    });
    await toPromise(createActor(app).start());

    const spans = exporter.getFinishedSpans();
    const ids = runTraceIds("embedded-1");
    expect(spans.every((span) => span.spanContext().traceId === ids.traceId)).toBe(true);
    const root = spans.find((span) => parentOf(span) === undefined);
    expect(root?.name).toBe("stagechart.run code-review");
    expect(root?.spanContext().spanId).toBe(ids.spanId);
    const stages = spans.filter((span) => parentOf(span) === ids.spanId);
    expect(stages.map((span) => span.attributes["stagechart.stage.id"])).toEqual([
      "plan",
      "execute",
      "review",
    ]);
    const calls = spans.filter((span) => span.name.startsWith("chat"));
    expect(calls).toHaveLength(h.audit.events.filter((e) => e.type === "ModelTurn").length);
    await tracing.shutdown();
  });

  it("go through the app's own tracer provider, a run's sessions all in the trace its id gives", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    const tracing = await tracingWith(provider.getTracer("app"));
    const h = harness(CODE_REVIEW_SCRIPT, { tracing });
    const started = await startRun(codeReview(), { host: h.host, runId: "run-7", task: "t" });
    if (!started.ok) throw started.error;
    expect((await started.value.result).status).toBe("done");

    const spans = exporter.getFinishedSpans();
    const ids = runTraceIds("run-7");
    const session = spans.find((span) => span.name === "stagechart.run code-review");
    // Its ids are the provider's: the session hangs under the run's root context instead.
    expect(session?.spanContext().traceId).toBe(ids.traceId);
    expect(parentOf(session as ReadableSpan)).toBe(ids.spanId);
    expect(spans.every((span) => span.spanContext().traceId === ids.traceId)).toBe(true);
    expect(spans.filter((span) => span.name.startsWith("stagechart.stage "))).toHaveLength(3);
  });
});
