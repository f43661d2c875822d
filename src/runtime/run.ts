import { randomUUID } from "node:crypto";
import { type Actor, type AnyStateMachine, createActor, toPromise } from "xstate";
import {
  createPipelineMachine,
  type PipelineContext,
  type PipelineEvent,
  type PipelineOutput,
  type RunStatus,
} from "../compiler/pipeline-machine.js";
import { overrideTargets } from "../compiler/topology.js";
import type { JsonValue, StageResult } from "../definitions/contract.js";
import { compileSchema, describeSchemaErrors } from "../definitions/json-schema.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import {
  type ErrorView,
  err,
  ok,
  type Result,
  StagechartError,
  toStagechartError,
} from "../errors.js";
import type { AuditEvent, AuditSink } from "../inspect/audit.js";
import { runCodeStage } from "./code-stages.js";
import type { Host } from "./host.js";
import { rulesGrantPolicy } from "./rules.js";
import { stageMachineFor } from "./run-stage.js";

export interface RunOptions {
  host: Host;
  /** The run's id (`ctx.workflowRunId`); generated when not given. */
  runId?: string;
  /** Shorthand for `ctx.task`. */
  task?: string;
  ctx?: Record<string, unknown>;
}

export interface RunResult {
  runId: string;
  status: RunStatus;
  output?: JsonValue;
  error?: ErrorView;
  results: Record<string, StageResult>;
}

export interface RunHandle {
  runId: string;
  /** The running pipeline: a plain XState actor. */
  actor: Actor<AnyStateMachine>;
  /** Settles when the run ends, whatever the outcome; never rejects for a failed run. */
  result: Promise<RunResult>;
  /** Every audit event of the run, live, ending when the run ends. */
  events(): AsyncIterable<AuditEvent>;
  /** OVERRIDE, REDO or CANCEL; an override to a stage the topology cannot reach is refused. */
  send(event: PipelineEvent): Result<void>;
  stop(): void;
}

/**
 * Compiles a pipeline for a host: an ordinary XState machine, which other machines may invoke
 * with `input: {runId, ctx}` and whose output is `{status, result, results, error?}`.
 */
export function compilePipeline(pipeline: PipelineDefinition, host: Host): AnyStateMachine {
  const hooks = collectHooks(pipeline);
  const grants =
    pipeline.grants.approve.length + pipeline.grants.deny.length > 0
      ? rulesGrantPolicy(pipeline.grants)
      : undefined;
  const pipelineHost: Host = {
    ...host,
    hooks: { ...hooks, ...host.hooks },
    ...(grants && { grantPolicy: grants }),
  };
  return createPipelineMachine(pipeline, {
    stageMachine: stageMachineFor(pipelineHost),
    runCode: (stage, input, signal) => runCodeStage(pipelineHost, stage, input, signal),
    audit: (event) => pipelineHost.audit.emit(event),
  });
}

/** Starts a run of a pipeline. Invalid ctx is refused before anything runs. */
export function startRun(pipeline: PipelineDefinition, options: RunOptions): Result<RunHandle> {
  const runId = options.runId ?? `run-${randomUUID().slice(0, 8)}`;
  const ctx = { ...options.ctx, ...(options.task !== undefined && { task: options.task }) };
  const invalid = checkContext(pipeline, ctx);
  if (invalid) return err(invalid);

  const feed = new EventFeed();
  const host: Host = { ...options.host, audit: feed.tee(options.host.audit, runId) };
  const actor = createActor(compilePipeline(pipeline, host), { input: { runId, ctx } });
  host.audit.emit({ type: "RunStarted", runId, payload: { pipelineId: pipeline.id, ctx } });
  const result = toPromise(actor).then(
    (output: PipelineOutput) => finish(host.audit, runId, output),
    (error: unknown) =>
      finish(host.audit, runId, {
        status: "failed",
        results: {},
        error: toStagechartError(error, "ExtensionHost/LifecycleFailure").toModelView(),
      }),
  );
  void result.finally(() => feed.close());
  actor.start();
  return ok({
    runId,
    actor,
    result,
    events: () => feed.iterate(),
    send: (event) => {
      const refused = refuse(pipeline, actor.getSnapshot().context as PipelineContext, event);
      if (refused) return err(refused);
      actor.send(event);
      return ok(undefined);
    },
    stop: () => actor.stop(),
  });
}

function finish(
  audit: AuditSink,
  runId: string,
  output: Omit<PipelineOutput, "result"> & Partial<PipelineOutput>,
): RunResult {
  const type =
    output.status === "done"
      ? "RunCompleted"
      : output.status === "cancelled"
        ? "RunCancelled"
        : "RunFailed";
  audit.emit({
    type,
    runId,
    payload: { status: output.status, ...(output.error && { error: output.error }) },
  });
  const last = output.result?.output;
  return {
    runId,
    status: output.status,
    ...(last !== undefined && output.status === "done" && { output: last }),
    ...(output.error && { error: output.error }),
    results: output.results,
  };
}

function checkContext(
  pipeline: PipelineDefinition,
  ctx: Record<string, unknown>,
): StagechartError | undefined {
  const validate = compileSchema(pipeline.context);
  if (!validate.ok)
    return new StagechartError(
      "Validation/PipelineContextInvalid",
      `the context schema of ${pipeline.id} does not compile`,
    );
  if (validate.value(ctx)) return undefined;
  const errors = describeSchemaErrors(validate.value.errors);
  return new StagechartError(
    "Validation/RunContextInvalid",
    `ctx does not match ${pipeline.id}'s context schema: ${errors.join("; ")}`,
    {
      errors,
    },
  );
}

/** Why a control event is refused (DESIGN.md §4.3), or nothing when it may be sent. */
function refuse(
  pipeline: PipelineDefinition,
  context: PipelineContext,
  event: PipelineEvent,
): StagechartError | undefined {
  if (event.type === "CANCEL") return undefined;
  const from = context.current?.replace(/_parallel$/, "");
  if (!from) return new StagechartError("Session/IllegalTransition", "the run is not in a stage");
  if (event.type === "OVERRIDE") {
    if (!event.reason?.trim())
      return new StagechartError(
        "Validation/OverrideReasonMissing",
        "an override needs a reason; it is audited",
      );
    if (!overrideTargets(pipeline, from).includes(event.to)) {
      return new StagechartError(
        "Session/IllegalTransition",
        `cannot override from ${from} to ${event.to}: the pipeline's transitions do not lead there`,
        { from, to: event.to, reachable: overrideTargets(pipeline, from) },
      );
    }
    return undefined;
  }
  if (!(context.visits[event.stage] ?? 0)) {
    return new StagechartError(
      "Session/IllegalTransition",
      `cannot redo ${event.stage}: it has not run yet`,
      {
        stage: event.stage,
      },
    );
  }
  return undefined;
}

function collectHooks(pipeline: PipelineDefinition): Host["hooks"] {
  const nested = Object.values(pipeline.stages).flatMap((stage) =>
    stage.kind === "pipeline" ? Object.entries(collectHooks(stage.pipeline)) : [],
  );
  return { ...Object.fromEntries(nested), ...pipeline.hooks };
}

/** Audit events of one run as a live stream: forwarded to the host's sink, and to readers. */
class EventFeed {
  private readonly buffer: AuditEvent[] = [];
  private readonly waiting: (() => void)[] = [];
  private closed = false;

  tee(sink: AuditSink, runId: string): AuditSink {
    return {
      emit: (input) => {
        const event = sink.emit(input);
        if (event.runId === runId) this.push(event);
        return event;
      },
    };
  }

  private push(event: AuditEvent): void {
    this.buffer.push(event);
    for (const wake of this.waiting.splice(0)) wake();
  }

  close(): void {
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake();
  }

  async *iterate(): AsyncIterable<AuditEvent> {
    let next = 0;
    while (true) {
      if (next < this.buffer.length) {
        yield this.buffer[next++] as AuditEvent;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }
}
