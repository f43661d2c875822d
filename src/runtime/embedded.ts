import { fingerprint } from "../compiler/definition-hash.js";
import type { PipelineContext } from "../compiler/pipeline-context.js";
import type { PipelineMachine } from "../compiler/pipeline-machine.js";
import { lookup } from "../compiler/stage-table.js";
import { outlineOf } from "../definitions/pipeline-outline.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import type { AuditSink } from "../events/audit.js";
import type { Host } from "./host.js";
import { endEventOf } from "./launch.js";
import type { StepStore } from "./persistence.js";
import { checkContext } from "./run-checks.js";
import { compileRunMachine } from "./run-machine.js";
import { runStartedPayload } from "./run-started.js";

/**
 * Compiles a pipeline for a host: an ordinary XState machine, which other machines may invoke
 * with `input: {runId, ctx}` and whose output is `{status, result, results, error?}`.
 *
 * Invoked so, it is a run of its own: its ctx is checked against the pipeline's context schema
 * (one it rejects fails the invocation with `Validation/RunContextInvalid`), and it audits its
 * start and end. On a host with a store it is durable: its run row, audit log, journal and
 * transcripts are kept there, so an app that restores its own persisted snapshot, in this
 * process or another, continues the run with its whole conversation and repeats no recorded call.
 */
export function compilePipeline(pipeline: PipelineDefinition, host: Host): PipelineMachine {
  // Its steps are written as its machines take them, through the store's synchronous side.
  const store: StepStore | undefined = host.store;
  const recorded = store ? storedAudit(store, host.audit) : host.audit;
  // A run restored from the app's own snapshot recorded events before: its spans resume.
  const traced = host.tracing?.watch(recorded, (runId) => store?.auditOf(runId) ?? []);
  const audit = traced ?? recorded;
  return compileRunMachine(
    pipeline,
    { ...host, audit, ...(traced && host.tracing?.content && { traceContent: traced.content }) },
    {
      begins: ({ runId, ctx }) => {
        const invalid = checkContext(pipeline, { ...ctx });
        if (invalid) throw invalid;
        if (store) keepRunRow(store, pipeline, runId, ctx);
        audit.emit({
          type: "RunStarted",
          runId,
          payload: runStartedPayload(pipeline, { ctx, embedded: true }),
        });
      },
      ends: (context) => {
        const { runId, error } = context;
        const status = context.status ?? "failed";
        audit.emit({
          type: endEventOf(status),
          runId,
          payload: { status, ...(error && { error }) },
        });
        if (!store) return;
        const output = status === "done" ? lastOutput(context) : undefined;
        const updated = store.updateRun(runId, {
          status,
          ...(error && { error }),
          ...(output !== undefined && { output }),
        });
        if (!updated.ok) throw updated.error;
      },
    },
  );
}

/** Every event in the store, at once (the app that invokes the run keeps its snapshots), then told to `also`. */
const storedAudit = (store: StepStore, also: AuditSink): AuditSink => ({
  emit(input) {
    const [event] = store.commitStep(input.runId, { events: [input] });
    also.emit(input);
    return event as NonNullable<typeof event>;
  },
});

/** The run's row, made when the run first begins (the journal and transcripts refer to it). */
function keepRunRow(
  store: StepStore,
  pipeline: PipelineDefinition,
  runId: string,
  ctx: PipelineContext["ctx"],
): void {
  if (store.getRun(runId).ok) return;
  const { hash, parts } = fingerprint(pipeline);
  const created = store.createRun({
    runId,
    pipelineId: pipeline.id,
    definitionHash: hash,
    options: { ctx, definition: parts, outline: outlineOf(pipeline), embedded: true },
  });
  if (!created.ok) throw created.error;
}

const lastOutput = (context: PipelineContext) =>
  context.lastEnded === undefined ? undefined : lookup(context.results, context.lastEnded)?.output;
