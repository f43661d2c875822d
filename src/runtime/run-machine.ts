import type { PipelineServices } from "../compiler/pipeline-context.js";
import { createPipelineMachine, type PipelineMachine } from "../compiler/pipeline-machine.js";
import { createStageMachine } from "../compiler/stage-machine.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { StagechartError } from "../errors.js";
import type { AuditEvent } from "../events/audit.js";
import { askMachineFor } from "./ask-stages.js";
import { BudgetWatch, watchedAudit } from "./budget.js";
import { runCodeStage } from "./code-stages.js";
import type { Host } from "./host.js";
import { rulesGrantPolicy } from "./rules.js";
import { refuseControl } from "./run-checks.js";
import { createStageServices, type HostOf } from "./stage-services.js";

/**
 * The machine a run drives: the pipeline's compiled states (cached per definition) provided with
 * a host's services. `machine.provide()` builds a new machine, whose state nodes XState then
 * sets up again as the run first takes each transition: done for every run, that was about a
 * fifth of a short in-memory run's CPU. So the runs of a pipeline on one host share one provided
 * machine (`sharedRunMachine`), and what is a run's own is found by its id as its work is done.
 */

/**
 * Compiles a pipeline for a host into a machine for one run; `run` is told as the machine's
 * own run begins and ends (see embedded.ts: `launch` audits those itself).
 */
export function compileRunMachine(
  pipeline: PipelineDefinition,
  host: Host,
  run?: PipelineServices["run"],
  spentBefore: readonly AuditEvent[] = [],
): PipelineMachine {
  const runHost = runHostFor(pipeline, host, spentBefore);
  return machineFor(pipeline, runHost, () => runHost, run);
}

/**
 * The host a run of `pipeline` does its work with: `host` with the pipeline's hooks, grant rules
 * and timeout, and its budget, which counts what the run spent before (a resumed run's stored
 * events) and since.
 */
export function runHostFor(
  pipeline: PipelineDefinition,
  host: Host,
  spentBefore: readonly AuditEvent[] = [],
): Host {
  const grants =
    pipeline.grants.approve.length + pipeline.grants.deny.length > 0
      ? rulesGrantPolicy(pipeline.grants)
      : undefined;
  const budget = pipeline.budget && new BudgetWatch(pipeline.budget, pipeline.id, host.clock.now);
  for (const event of budget ? spentBefore : []) budget?.observe(event);
  return {
    ...host,
    hooks: { ...collectHooks(pipeline), ...host.hooks },
    ...(grants && { grantPolicy: grants }),
    ...(pipeline.grants.timeout && { grantTimeout: pipeline.grants.timeout }),
    ...(budget && { budget, audit: watchedAudit(host.audit, budget) }),
  };
}

/** The pipeline's machine: what runs share from `shared`, what is a run's own from `hostOf`. */
function machineFor(
  pipeline: PipelineDefinition,
  shared: Host,
  hostOf: HostOf,
  run?: PipelineServices["run"],
): PipelineMachine {
  return createPipelineMachine(pipeline, {
    stageMachine: createStageMachine(createStageServices(shared, hostOf)),
    askMachine: askMachineFor(shared, pipeline, hostOf),
    runCode: (stage, input, signal) => runCodeStage(hostOf(input.runId), stage, input, signal),
    audit: (event) => hostOf(event.runId).audit.emit(event),
    ...(shared.stageSlots && { slots: shared.stageSlots }),
    refusal: (context, event) => refuseControl(pipeline, context, event)?.toModelView(),
    ...(run && { run }),
  });
}

/** A machine shared by the runs of one pipeline on one host, with the host of each run going on. */
interface SharedMachine {
  machine: PipelineMachine;
  runs: Map<string, Host>;
}

/** Shared machines by the host their runs were started on, then by pipeline. */
const sharedMachines = new WeakMap<Host, WeakMap<PipelineDefinition, SharedMachine>>();

/**
 * The machine for a run of `pipeline` on `sharing` (the host the run was started with), whose
 * own work is done with `runHost` (`sharing` with the run's audit sink, journal, transcripts,
 * budget and readers: nothing else may differ) until `release()`, once the run has settled.
 * A run whose id is already going on the shared machine gets a machine of its own.
 */
export function sharedRunMachine(
  pipeline: PipelineDefinition,
  sharing: Host,
  runHost: Host,
  runId: string,
): { machine: PipelineMachine; release(): void } {
  let byPipeline = sharedMachines.get(sharing);
  if (!byPipeline) {
    byPipeline = new WeakMap();
    sharedMachines.set(sharing, byPipeline);
  }
  let shared = byPipeline.get(pipeline);
  if (!shared) {
    const runs = new Map<string, Host>();
    const hostOf = (id: string) => runs.get(id) ?? notGoing(id);
    // What every run shares is read from a host built without any run's own parts, so the
    // machine keeps nothing of the run it was first built for.
    const machine = machineFor(pipeline, runHostFor(pipeline, sharing), hostOf);
    shared = { machine, runs };
    byPipeline.set(pipeline, shared);
  }
  const { runs, machine } = shared;
  if (runs.has(runId))
    return { machine: machineFor(pipeline, runHost, () => runHost), release() {} };
  runs.set(runId, runHost);
  return { machine, release: () => runs.delete(runId) };
}

/**
 * A shared machine's actors only work for runs going on it: its stopped actors do nothing more,
 * and a call in flight holds the host it started with.
 */
function notGoing(runId: string): never {
  throw new StagechartError(
    "ExtensionHost/LifecycleFailure",
    `run ${runId} is not going on this machine: it ended, or was never started on it`,
  );
}

/** The hooks of the pipeline's stages, and of the stages of the pipelines it runs. */
function collectHooks(pipeline: PipelineDefinition): Host["hooks"] {
  const nested = Object.values(pipeline.stages).flatMap((stage) =>
    stage.kind === "pipeline" ? Object.entries(collectHooks(stage.pipeline)) : [],
  );
  return { ...Object.fromEntries(nested), ...pipeline.hooks };
}
