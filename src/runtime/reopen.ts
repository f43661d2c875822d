import { fingerprint } from "../compiler/definition-hash.js";
import type { CarriedContext, PipelineContext } from "../compiler/pipeline-context.js";
import { stageOfState } from "../compiler/pipeline-states.js";
import { lookup } from "../compiler/stage-table.js";
import { onlyASibling } from "../compiler/topology.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { launchDurable, refuseLaunch } from "./durable.js";
import { checkRoot, type Host } from "./host.js";
import type { RunHandle, RunInspection } from "./launch.js";
import type { StepStore } from "./persistence.js";
import { owning, takeLease } from "./run.js";
import { checkSnapshotShape, currentShape } from "./snapshot-shape.js";
import type { RunStore } from "./store-port.js";

export interface ReopenOptions {
  host: Host;
  store: RunStore;
  /** The stage to run again; the stage the run ended from when not given. */
  stage?: string;
  /** Why the run is reopened: required, audited. */
  reason: string;
  /** Who reopens it, audited. */
  by: string;
  /** How long the run's lease lives without renewal (renewed every third of it). */
  leaseTtlMs?: number;
  /** Told every inspection event of the run's actors (and with `modelDelta`, each piece of a streaming reply). */
  inspect?: RunInspection;
}

/**
 * Reopens a stored run that ended `done` (done is final until a redo), for a pipeline
 * that opts in with `reopenable: true`: the run goes on, with its id, from `stage` as a new
 * execution of it (with the upstream it had the last time), everything its stages did before
 * carried on. The log gets `RunReopened` ({stage, from, by, reason}) and the run is `running`
 * again until it ends anew; stopped or killed, it resumes like any run. A `failed` or `cancelled`
 * run, or a pipeline that does not opt in, stays final (`Session/RunFinished`); a run that has not
 * ended, or a stage that never ran, is `Session/IllegalTransition` and a pipeline changed since is
 * `Session/DefinitionDrift` (the last two audited as `RequestRefused`).
 */
export async function reopenRun(
  pipeline: PipelineDefinition,
  runId: string,
  options: ReopenOptions,
): Promise<Result<RunHandle>> {
  return owning(options.store, runId, options, (store) =>
    launchReopen(pipeline, runId, options, store),
  );
}

function launchReopen(
  pipeline: PipelineDefinition,
  runId: string,
  options: ReopenOptions,
  store: StepStore,
): Result<RunHandle> {
  const root = checkRoot(options.host.root);
  if (!root.ok) return root;
  const run = store.getRun(runId);
  if (!run.ok) return run;
  const { status } = run.value;
  if (status === "running" || status === "suspended")
    return err(
      new StagechartError(
        "Session/IllegalTransition",
        `run ${runId} has not ended (${status}): redo a stage of it with resumeRun and a REDO event`,
        { runId },
      ),
    );
  if (status !== "done" || !pipeline.reopenable)
    return err(
      new StagechartError(
        "Session/RunFinished",
        `run ${runId} already ended (${status})${
          status === "done"
            ? `; ${pipeline.id} does not reopen a run that ended done (reopenable: true)`
            : ""
        }`,
        { runId },
      ),
    );
  if (!options.reason.trim())
    return err(
      new StagechartError(
        "Validation/ReopenReasonMissing",
        "reopening a run that ended done needs a reason; it is audited",
      ),
    );
  const { hash } = fingerprint(pipeline);
  const durable = takeLease(store, runId, hash, options.leaseTtlMs);
  if (!durable.ok) return durable;
  const point = reopenPoint(pipeline, runId, store, hash, options.stage);
  if (!point.ok) {
    const asked = options.stage && { control: { type: "REDO" as const, stage: options.stage } };
    return err(refuseLaunch(store, durable.value.owner, { runId, ...asked }, point.error));
  }
  const { stage, from, carried } = point.value;
  const reopened = store.updateRun(runId, { status: "running", output: undefined });
  if (!reopened.ok) {
    store.releaseLease(runId, durable.value.owner);
    return reopened;
  }
  const launched = launchDurable({ ...pipeline, entry: stage }, options.host, durable.value, {
    runId,
    ctx: (run.value.options.ctx ?? {}) as Record<string, unknown>,
    carried,
    inspect: options.inspect,
    start: {
      type: "RunReopened",
      payload: { pipelineId: pipeline.id, stage, from, by: options.by, reason: options.reason },
    },
  });
  // Nothing ran: the run is done as it was (its stored output is not kept).
  if (!launched.ok) store.updateRun(runId, { status });
  return launched;
}

interface ReopenPoint {
  stage: string;
  /** The stage the run ended from. */
  from: string;
  carried: CarriedContext;
}

/** Where a done run goes on from, and what it carries on, from its final snapshot. */
function reopenPoint(
  pipeline: PipelineDefinition,
  runId: string,
  store: StepStore,
  hash: string,
  asked: string | undefined,
): Result<ReopenPoint> {
  const stored = store.getSnapshot(runId);
  if (!stored.ok) return stored;
  const damaged = checkSnapshotShape(runId, stored.value.snapshot);
  if (damaged) return err(damaged);
  if (stored.value.definitionHash !== hash)
    return err(
      new StagechartError(
        "Session/DefinitionDrift",
        `the pipeline changed since run ${runId} ended; it is reopened only into the pipeline it ran with`,
        { runId },
      ),
    );
  const context = (currentShape(stored.value.snapshot) as { context: PipelineContext }).context;
  const from = stageOfState(context.current ?? "");
  const stage = asked ?? from;
  const refused = (why: string) =>
    err(
      new StagechartError("Session/IllegalTransition", `cannot redo ${stage}: ${why}`, { stage }),
    );
  if (!Object.hasOwn(pipeline.stages, stage)) return refused(`${pipeline.id} has no such stage`);
  if (!(lookup(context.visits, stage) ?? 0)) return refused("it has not run in this run");
  if (onlyASibling(pipeline, stage))
    return refused("it runs only as a parallel sibling; redo the stage that fans out to it");
  const { visits, modelCalls, results, lastEnded, upstreamOf, groups, entered } = context;
  return ok({
    stage,
    from,
    carried: {
      visits,
      modelCalls,
      results,
      ...(lastEnded !== undefined && { lastEnded }),
      upstreamOf,
      groups,
      upstream: lookup(upstreamOf, stage) ?? [],
      ...(entered !== undefined && { entered }),
    },
  });
}
