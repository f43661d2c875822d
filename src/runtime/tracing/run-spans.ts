import { createHash } from "node:crypto";
import {
  type Attributes,
  type Context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { AuditEvent, AuditEventInput, AuditSink } from "../../events/audit.js";

/**
 * A run's OpenTelemetry spans, built from its audit events as they are recorded: one span per
 * process session of the run (its start or a resume), under it one per stage execution, one per
 * attempt, and under those one per model call, tool call, grant request and question. The audit
 * log is where every boundary is already recorded with its time, for every store and both run
 * paths (the run API and an embedded machine), so the spans say what the log says.
 */

/**
 * Where a host's runs' spans go (`createHost({tracing})`): made by `createTracing` (an OTLP
 * exporter of its own), `tracingFromEnv` (the standard `OTEL_*` variables) or `tracingWith` (a
 * tracer of the app's own OpenTelemetry setup). Those load OpenTelemetry when called, so a
 * process that does not trace never loads it.
 */
export interface Tracing {
  /**
   * Whether spans carry what was said: model replies, the messages sent since the previous call,
   * tool arguments, questions and answers. Off by default: then only names, counts and outcomes.
   */
  readonly content: boolean;
  /** `sink`, with every event it records also made into its run's spans. */
  watch(sink: AuditSink, stored: (runId: string) => readonly AuditEvent[]): TracedAudit;
  /** Exports the spans ended so far; a process about to exit waits for it. */
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** An audit sink that also makes spans, and takes what a model call said for its span. */
export interface TracedAudit extends AuditSink {
  content(key: TurnKey, said: TurnContent): void;
}

/** What spans are made with. */
export interface SpanSource {
  readonly tracer: Tracer;
  readonly content: boolean;
  /** Lets the next span started take these ids, when the tracer's provider allows it. */
  readonly pins?: SpanIdPins;
}

/** A `Tracing` over `source`, flushed and shut down by `provider` (none: the app's own). */
export const tracingOf = (
  source: SpanSource,
  provider: { forceFlush(): Promise<void>; shutdown(): Promise<void> },
): Tracing => ({
  content: source.content,
  watch: (sink, stored) => tracedAudit(sink, source, stored),
  forceFlush: () => provider.forceFlush(),
  shutdown: () => provider.shutdown(),
});

/** Ids a span is to take when it starts: the tracer's id generator hands them out once. */
export interface SpanIdPins {
  startPinned(ids: { traceId: string; spanId: string }, start: () => Span): Span;
}

/** What a model call said, kept for its span until the turn is audited (content tracing only). */
export interface TurnContent {
  /** The messages sent since the previous call of the attempt. */
  input: unknown;
  output: unknown;
}

const hex = (text: string, length: number) =>
  createHash("sha256").update(text).digest("hex").slice(0, length);

/**
 * A run's trace id and the id of its first session's span, derived from the run id: a resumed
 * run's spans join the trace its first process began, with nothing stored to find it, and a
 * fork's trace links to the run it was forked from.
 */
export const runTraceIds = (runId: string) => ({
  traceId: hex(`stagechart trace ${runId}`, 32),
  spanId: hex(`stagechart run ${runId}`, 16),
});

const remote = (ids: { traceId: string; spanId: string }): SpanContext => ({
  ...ids,
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
});

const SESSION_STARTS = new Set(["RunStarted", "RunResumed", "RunReopened"]);
const RUN_ENDS: Record<string, string> = {
  RunCompleted: "done",
  RunFailed: "failed",
  RunCancelled: "cancelled",
  RunSuspended: "suspended",
};

/** The audit sink `sink` with every recorded event also told to the run's spans. */
function tracedAudit(
  sink: AuditSink,
  tracing: SpanSource,
  stored: (runId: string) => readonly AuditEvent[],
): TracedAudit {
  const runs = new Map<string, RunSpans>();
  return {
    emit(input: AuditEventInput) {
      let run = runs.get(input.runId);
      // Read before the event is recorded: what the run recorded in earlier processes.
      const before = run ? undefined : stored(input.runId);
      const event = sink.emit(input);
      if (!run) {
        run = new RunSpans(tracing, event, before ?? []);
        runs.set(event.runId, run);
      }
      if (run.observe(event)) runs.delete(event.runId);
      return event;
    },
    content(key, said) {
      runs.get(key.runId)?.said.set(`${key.stageExecutionId}/${key.attempt}`, said);
    },
  };
}

export interface TurnKey {
  runId: string;
  stageExecutionId: string;
  attempt: number;
}

interface Tally {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  calls: number;
}

interface StageSpans {
  span: Span;
  tally: Tally;
  attempt?: { n: number; span: Span };
}

const newTally = (): Tally => ({ inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 });

const tallyAttributes = (tally: Tally): Attributes => ({
  "stagechart.model_calls": tally.calls,
  "stagechart.usage.input_tokens": tally.inputTokens,
  "stagechart.usage.output_tokens": tally.outputTokens,
  ...(tally.costUsd > 0 && { "stagechart.cost_usd": tally.costUsd }),
});

const ms = (at: string) => Date.parse(at);
const text = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));
const errorMessage = (error: unknown) =>
  typeof error === "object" && error !== null && "message" in error
    ? `${String((error as { code?: unknown }).code ?? "")} ${String((error as { message: unknown }).message)}`.trim()
    : text(error);

/** One run's spans in this process, from its first event seen here to its last. */
class RunSpans {
  private readonly session: Span;
  private readonly context: Context;
  private readonly tally = newTally();
  private readonly stages = new Map<string, StageSpans>();
  /** Grant requests by proposal, questions by stage execution: waits not answered yet. */
  private readonly waits = new Map<string, Span>();
  /** Turns the run audited before this process: a resume audits them again as it replays them. */
  private readonly replayed = new Set<string>();
  readonly said = new Map<string, TurnContent>();

  constructor(
    private readonly tracing: SpanSource,
    first: AuditEvent,
    stored: readonly AuditEvent[],
  ) {
    for (const event of stored) if (event.type === "ModelTurn") this.replayed.add(turnKey(event));
    const { runId } = first;
    const ids = runTraceIds(runId);
    const opensRun =
      (first.type === "RunStarted" || first.type === "RunResumed") &&
      !stored.some((event) => SESSION_STARTS.has(event.type));
    const forkedFrom = stored.find((event) => event.type === "RunForked")?.payload.from as
      | { runId?: unknown }
      | undefined;
    const links: Link[] = [];
    if (!opensRun)
      links.push({ context: remote(ids), attributes: { "stagechart.link": "resumed" } });
    if (typeof forkedFrom?.runId === "string")
      links.push({
        context: remote(runTraceIds(forkedFrom.runId)),
        attributes: { "stagechart.link": "forked", "stagechart.run.id": forkedFrom.runId },
      });
    const pipelineId = first.payload.pipelineId;
    const options = {
      startTime: ms(first.at),
      links,
      attributes: {
        "stagechart.run.id": runId,
        "stagechart.run.session": opensRun
          ? "start"
          : first.type === "RunReopened"
            ? "reopen"
            : "resume",
        ...(typeof pipelineId === "string" && { "stagechart.pipeline.id": pipelineId }),
      },
    };
    const name = typeof pipelineId === "string" ? `stagechart.run ${pipelineId}` : "stagechart.run";
    const { tracer, pins } = tracing;
    // The first session's span is the trace's root, with the ids the run's id gives; a later
    // session's is a child of it. Without pins (a tracer of the embedder's own provider) every
    // session is a child of that root's context, so a run still keeps one trace id.
    if (opensRun && pins)
      this.session = pins.startPinned(ids, () => tracer.startSpan(name, options, ROOT_CONTEXT));
    else {
      const parent = trace.setSpanContext(ROOT_CONTEXT, remote(ids));
      const spanId = hex(`stagechart session ${runId} ${first.seq}`, 16);
      const start = () => tracer.startSpan(name, options, parent);
      this.session = pins ? pins.startPinned({ traceId: ids.traceId, spanId }, start) : start();
    }
    this.context = trace.setSpan(ROOT_CONTEXT, this.session);
  }

  /** Records `event` on the spans; true once the run's session has ended. */
  observe(event: AuditEvent): boolean {
    const status = RUN_ENDS[event.type];
    if (status !== undefined) {
      this.end(event, status);
      return true;
    }
    if (event.stageExecutionId === undefined) {
      if (!SESSION_STARTS.has(event.type)) this.session.addEvent(event.type, ms(event.at));
      return false;
    }
    const stage = this.stageOf(event);
    const parent = stage.attempt?.span ?? stage.span;
    switch (event.type) {
      case "ModelTurn":
        this.modelCall(event, stage, parent);
        break;
      case "ToolSucceeded":
      case "ToolFailed":
        this.toolCall(event, parent);
        break;
      case "GrantRequested":
        this.wait(`grant ${String(event.payload.proposalId)}`, event, parent, {
          name: `stagechart.grant ${String(event.payload.tool)}`,
          attributes: {
            "gen_ai.tool.name": String(event.payload.tool),
            "gen_ai.tool.call.id": String(event.payload.proposalId),
          },
        });
        break;
      case "GrantIssued":
      case "ToolDenied":
        this.answer(`grant ${String(event.payload.proposalId)}`, event, {
          "stagechart.grant.decision": event.type === "GrantIssued" ? "approve" : "deny",
          ...(event.payload.by !== undefined && { "stagechart.grant.by": text(event.payload.by) }),
        });
        if (event.type === "ToolDenied") parent.addEvent("ToolDenied", ms(event.at));
        break;
      case "InputRequested":
        this.wait(`ask ${event.stageExecutionId}`, event, parent, {
          name: `stagechart.ask ${event.stageId ?? ""}`.trim(),
          attributes: this.tracing.content
            ? { "stagechart.ask.prompt": text(event.payload.prompt) }
            : {},
        });
        break;
      case "InputAnswered":
        this.answer(`ask ${event.stageExecutionId}`, event, {
          "stagechart.ask.by": text(event.payload.by),
          ...(this.tracing.content && { "stagechart.ask.answer": text(event.payload.value) }),
        });
        break;
      case "StageExited":
      case "StageCancelled":
      case "StageInitFailed":
        this.endStage(event, stage);
        break;
      default:
        parent.addEvent(event.type, eventAttributes(event, this.tracing.content), ms(event.at));
    }
    return false;
  }

  private stageOf(event: AuditEvent): StageSpans {
    const id = event.stageExecutionId as string;
    let stage = this.stages.get(id);
    if (!stage) {
      const span = this.tracing.tracer.startSpan(
        `stagechart.stage ${event.stageId ?? id}`,
        {
          startTime: ms(event.at),
          attributes: {
            "stagechart.run.id": event.runId,
            "stagechart.stage.id": event.stageId ?? "",
            "stagechart.stage.execution_id": id,
          },
        },
        this.context,
      );
      stage = { span, tally: newTally() };
      this.stages.set(id, stage);
    }
    if (event.attempt !== undefined && stage.attempt?.n !== event.attempt) {
      stage.attempt?.span.end(ms(event.at));
      const span = this.tracing.tracer.startSpan(
        `stagechart.attempt ${event.attempt}`,
        { startTime: ms(event.at), attributes: { "stagechart.attempt": event.attempt } },
        trace.setSpan(ROOT_CONTEXT, stage.span),
      );
      stage.attempt = { n: event.attempt, span };
    }
    return stage;
  }

  private modelCall(event: AuditEvent, stage: StageSpans, parent: Span): void {
    const key = turnKey(event);
    const said = this.said.get(`${event.stageExecutionId}/${event.attempt}`);
    this.said.delete(`${event.stageExecutionId}/${event.attempt}`);
    // A turn replayed from the journal was exported by the process that made the call.
    if (this.replayed.has(key)) return;
    this.replayed.add(key);
    const { payload } = event;
    const model = typeof payload.model === "string" ? payload.model : undefined;
    const [system, ...rest] = model?.split(":") ?? [];
    const requestModel = rest.length > 0 ? rest.join(":") : system;
    const usage = (payload.usage ?? {}) as { inputTokens?: unknown; outputTokens?: unknown };
    const end = ms(event.at);
    const durationMs = typeof payload.durationMs === "number" ? payload.durationMs : 0;
    const span = this.tracing.tracer.startSpan(
      requestModel ? `chat ${requestModel}` : "chat",
      {
        startTime: end - durationMs,
        attributes: {
          "gen_ai.operation.name": "chat",
          ...(rest.length > 0 &&
            system && { "gen_ai.system": system, "gen_ai.provider.name": system }),
          ...(requestModel && { "gen_ai.request.model": requestModel }),
          ...(typeof usage.inputTokens === "number" && {
            "gen_ai.usage.input_tokens": usage.inputTokens,
          }),
          ...(typeof usage.outputTokens === "number" && {
            "gen_ai.usage.output_tokens": usage.outputTokens,
          }),
          ...(typeof payload.finishReason === "string" && {
            "gen_ai.response.finish_reasons": [payload.finishReason],
          }),
          ...(typeof payload.costUsd === "number" && { "stagechart.cost_usd": payload.costUsd }),
          "stagechart.turn": Number(payload.turn),
          "stagechart.turn.outcome": String(payload.outcome),
        },
      },
      trace.setSpan(ROOT_CONTEXT, parent),
    );
    if (said && this.tracing.content) {
      span.setAttribute("gen_ai.input.messages", JSON.stringify(said.input));
      span.setAttribute("gen_ai.output.messages", JSON.stringify(said.output));
    }
    if (payload.outcome === "error")
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(payload.error) });
    span.end(end);
    for (const tally of [this.tally, stage.tally]) {
      tally.calls++;
      if (typeof usage.inputTokens === "number") tally.inputTokens += usage.inputTokens;
      if (typeof usage.outputTokens === "number") tally.outputTokens += usage.outputTokens;
      if (typeof payload.costUsd === "number") tally.costUsd += payload.costUsd;
    }
  }

  private toolCall(event: AuditEvent, parent: Span): void {
    const { payload } = event;
    const end = ms(event.at);
    const durationMs = typeof payload.durationMs === "number" ? payload.durationMs : 0;
    const tool = String(payload.tool);
    const span = this.tracing.tracer.startSpan(
      `execute_tool ${tool}`,
      {
        startTime: end - durationMs,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": tool,
          "gen_ai.tool.call.id": String(payload.proposalId),
          ...(this.tracing.content && {
            "gen_ai.tool.call.arguments": text(payload.argsSummary),
          }),
        },
      },
      trace.setSpan(ROOT_CONTEXT, parent),
    );
    if (event.type === "ToolFailed")
      span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(payload.error) });
    span.end(end);
  }

  private wait(
    key: string,
    event: AuditEvent,
    parent: Span,
    { name, attributes }: { name: string; attributes: Attributes },
  ): void {
    this.waits.get(key)?.end(ms(event.at));
    this.waits.set(
      key,
      this.tracing.tracer.startSpan(
        name,
        { startTime: ms(event.at), attributes },
        trace.setSpan(ROOT_CONTEXT, parent),
      ),
    );
  }

  private answer(key: string, event: AuditEvent, attributes: Attributes): void {
    const span = this.waits.get(key);
    if (!span) return;
    span.setAttributes(attributes);
    span.end(ms(event.at));
    this.waits.delete(key);
  }

  private endStage(event: AuditEvent, stage: StageSpans): void {
    const at = ms(event.at);
    const { verdict, reason, error } = event.payload;
    stage.span.setAttributes({
      ...tallyAttributes(stage.tally),
      ...(typeof verdict === "string" && { "stagechart.stage.verdict": verdict }),
      ...(typeof reason === "string" && { "stagechart.stage.reason": reason }),
    });
    if (event.type !== "StageExited" || verdict === "fail")
      stage.span.setStatus({
        code: SpanStatusCode.ERROR,
        message:
          error !== undefined
            ? errorMessage(error)
            : typeof reason === "string"
              ? reason
              : event.type,
      });
    for (const [key, span] of this.waits)
      if (key === `ask ${event.stageExecutionId}`) {
        span.end(at);
        this.waits.delete(key);
      }
    stage.attempt?.span.end(at);
    stage.span.end(at);
    this.stages.delete(event.stageExecutionId as string);
  }

  /** The session ends: what is still open ends with it (a suspended run's waits, say). */
  private end(event: AuditEvent, status: string): void {
    const at = ms(event.at);
    for (const span of this.waits.values()) span.end(at);
    for (const stage of this.stages.values()) {
      stage.span.setAttributes(tallyAttributes(stage.tally));
      stage.attempt?.span.end(at);
      stage.span.end(at);
    }
    this.session.setAttributes({ ...tallyAttributes(this.tally), "stagechart.run.status": status });
    if (status === "failed")
      this.session.setStatus({
        code: SpanStatusCode.ERROR,
        message: errorMessage(event.payload.error),
      });
    this.session.end(at);
  }
}

const turnKey = (event: AuditEvent) =>
  `${event.stageExecutionId}/${event.attempt}/${String(event.payload.turn)}`;

/** Payload strings that name or count things, never what somebody said. */
const PLAIN_KEYS = new Set(["reason", "code", "scope", "limit", "resolution", "answer", "source"]);

/**
 * A span event's attributes from an audit event's payload: its numbers and flags, and its
 * strings when they name things (`PLAIN_KEYS`) or when content is exported.
 */
function eventAttributes(event: AuditEvent, content: boolean): Attributes {
  const attributes: Attributes = {};
  for (const [key, value] of Object.entries(event.payload))
    if (
      typeof value === "number" ||
      typeof value === "boolean" ||
      (typeof value === "string" && (content || PLAIN_KEYS.has(key)))
    )
      attributes[`stagechart.${key}`] = value;
  return attributes;
}
