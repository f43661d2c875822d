import { randomUUID } from "node:crypto";
import type { Snapshot } from "xstate";
import { describeDrift, fingerprint } from "../compiler/definition-hash.js";
import type { PipelineEvent } from "../compiler/pipeline-context.js";
import { outlineOf } from "../definitions/pipeline-outline.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError, toStagechartError } from "../errors.js";
import type { ResumeInput } from "./ask-stages.js";
import {
  cancelNeverBegun,
  type DurableLaunch,
  launchDurable,
  refuseLaunch,
  withResult,
} from "./durable.js";
import { checkRoot, type Host, inMemoryRunHost } from "./host.js";
import {
  type GrantAnswer,
  type Launch,
  launch,
  type RunHandle,
  type RunInspection,
} from "./launch.js";
import { LEASE_TTL_MS, leaseOwner, ownerIsGone } from "./lease-owner.js";
import type { StepStore } from "./persistence.js";
import { checkContext } from "./run-checks.js";
import { runStartedPayload } from "./run-started.js";
import { checkSnapshotShape } from "./snapshot-shape.js";
import type { RunStore } from "./store-port.js";

export { compilePipeline } from "./embedded.js";
export type { GrantAnswer, RunHandle, RunResult } from "./launch.js";
export type { RunWait } from "./suspension.js";

export interface RunOptions {
  host: Host;
  /**
   * Makes the run durable: every step is committed here, and the run can be resumed (default:
   * the host's). Any store: SQLite, PostgreSQL (`openStore`), or another implementing the port.
   */
  store?: RunStore;
  /** How long a durable run's lease lives without renewal (renewed every third of it). */
  leaseTtlMs?: number;
  /** Stored with a durable run: what resuming it needs (pipeline file, model spec, root, mode). */
  resumeWith?: Record<string, unknown>;
  /** The run's id (`ctx.workflowRunId`); generated when not given. */
  runId?: string;
  /** Shorthand for `ctx.task`. */
  task?: string;
  ctx?: Record<string, unknown>;
  /** Told every inspection event of the run's actors (and with `modelDelta`, each piece of a streaming reply) (e.g. `stagechart inspect`'s stream). */
  inspect?: RunInspection;
  /**
   * Aborting it cancels the run, as `send({type: "CANCEL"})` does: it ends `cancelled`, and is
   * stored so. One aborted already cancels the run before its first step.
   */
  signal?: AbortSignal;
}

/**
 * Starts a run of a pipeline. Invalid ctx, and a model that cannot run the pipeline (a script
 * naming stages it does not have), are refused before anything runs.
 */
export async function startRun(
  pipeline: PipelineDefinition,
  options: RunOptions,
): Promise<Result<RunHandle>> {
  const runId = options.runId ?? `run-${randomUUID().slice(0, 8)}`;
  const store = options.store ?? options.host.store;
  if (!store) return launchStart(pipeline, { ...options, runId }, undefined);
  return owning(store, runId, options, (steps) =>
    launchStart(pipeline, { ...options, runId }, steps),
  );
}

function launchStart(
  pipeline: PipelineDefinition,
  options: RunOptions & { runId: string },
  store: StepStore | undefined,
): Result<RunHandle> {
  const root = checkRoot(options.host.root);
  if (!root.ok) return root;
  const { runId } = options;
  if (options.task !== undefined && options.ctx?.task !== undefined)
    return err(
      new StagechartError(
        "Validation/RunContextInvalid",
        "the task is given twice (as task and as ctx.task); give it once",
      ),
    );
  const ctx = { ...options.ctx, ...(options.task !== undefined && { task: options.task }) };
  const invalid = checkContext(pipeline, ctx) ?? options.host.model.checkPipeline?.(pipeline);
  if (invalid) return err(invalid);
  const { signal } = options;
  const request: Launch = {
    runId,
    ctx,
    inspect: options.inspect,
    ...(signal?.aborted && { control: ABORTED }),
    start: { type: "RunStarted", payload: started(pipeline, ctx) },
  };
  if (!store) {
    const memoryRun = { ...request, startedOn: options.host };
    return cancelledOnAbort(signal, launch(pipeline, inMemoryRunHost(options.host), memoryRun));
  }

  const { hash, parts } = fingerprint(pipeline);
  // A store failing here (a full disk) is the run's refusal, as a value.
  const created = storeResult(() =>
    store.createRun({
      runId,
      pipelineId: pipeline.id,
      definitionHash: hash,
      options: { ...options.resumeWith, ctx, definition: parts, outline: outlineOf(pipeline) },
    }),
  );
  if (!created.ok) return created;
  const durable = takeLease(store, runId, hash, options.leaseTtlMs);
  if (!durable.ok) return durable;
  return cancelledOnAbort(signal, launchDurable(pipeline, options.host, durable.value, request));
}

export interface ResumeOptions {
  host: Host;
  /** Where the run is kept; the host's store when not given. */
  store?: RunStore;
  /** The lease owner a worker claimed the run under (a new one when not given). */
  owner?: string;
  /** Resume even though the pipeline changed since the run's snapshot. */
  force?: boolean;
  /** How long the run's lease lives without renewal (renewed every third of it). */
  leaseTtlMs?: number;
  /** Answers to the grant requests a suspended run waits for, by proposal id. */
  answers?: readonly GrantAnswer[];
  /** Answers to the ask stages a suspended run waits for (`{value, by?, stageExecutionId?}`). */
  inputs?: readonly ResumeInput[];
  /**
   * OVERRIDE, REDO or CANCEL, sent once the run is going again. One the run refuses refuses the
   * resume: nothing runs, and the refusal is audited (`RequestRefused`).
   */
  control?: PipelineEvent;
  /** Told every inspection event of the run's actors (and with `modelDelta`, each piece of a streaming reply) (e.g. `stagechart inspect`'s stream). */
  inspect?: RunInspection;
  /**
   * Aborting it cancels the run, as `send({type: "CANCEL"})` does. One aborted already resumes
   * the run to cancel it (in place of `control`), as `control: CANCEL` does.
   */
  signal?: AbortSignal;
}

/**
 * Continues a stored run from its latest snapshot: calls in flight at the crash
 * run again with the same idempotency keys, everything recorded is reused, backoff deadlines and
 * pending grant requests carry on. A run killed before its first step was committed (its row is
 * all there is) starts from its beginning, with its id, ctx and options — or, asked to cancel,
 * is cancelled without starting anything. A changed pipeline is
 * `Session/DefinitionDrift` unless forced; a damaged snapshot is `Session/SnapshotCorrupt`.
 */
export async function resumeRun(
  pipeline: PipelineDefinition,
  runId: string,
  options: ResumeOptions,
): Promise<Result<RunHandle>> {
  const store = options.store ?? options.host.store;
  if (!store)
    return err(
      new StagechartError("Session/NoStore", `run ${runId} cannot be resumed: no store is given`),
    );
  return owning(store, runId, options, (steps) => launchResume(pipeline, runId, options, steps));
}

function launchResume(
  pipeline: PipelineDefinition,
  runId: string,
  options: ResumeOptions,
  store: StepStore,
): Result<RunHandle> {
  const root = checkRoot(options.host.root);
  if (!root.ok) return root;
  const run = store.getRun(runId);
  if (!run.ok) return run;
  if (["done", "failed", "cancelled"].includes(run.value.status)) {
    return err(
      new StagechartError(
        "Session/RunFinished",
        `run ${runId} already ended (${run.value.status})`,
        { runId },
      ),
    );
  }
  const unfit = options.host.model.checkPipeline?.(pipeline);
  if (unfit) return err(unfit);
  const { hash } = fingerprint(pipeline);
  const durable = takeLease(store, runId, hash, options.leaseTtlMs);
  if (!durable.ok) return durable;
  const { signal } = options;
  const asked = signal?.aborted ? { ...options, control: ABORTED } : options;
  const from = resumePoint(pipeline, run.value, { ...asked, store }, hash);
  if (!from.ok) {
    const request = {
      runId,
      answers: options.answers,
      inputs: options.inputs,
      control: options.control,
    };
    return err(refuseLaunch(store, durable.value.owner, request, from.error));
  }
  const { control } = from.value;
  if (from.value.snapshot === undefined && control?.type === "CANCEL") {
    return cancelNeverBegun(pipeline, options.host, durable.value, from.value, control.reason);
  }
  return cancelledOnAbort(signal, launchDurable(pipeline, options.host, durable.value, from.value));
}

/** What aborting a run's signal sends it. */
const ABORTED: PipelineEvent = { type: "CANCEL" };

/** The run, cancelled when `signal` aborts while it lives (the listener goes once it ends). */
function cancelledOnAbort(
  signal: AbortSignal | undefined,
  launched: Result<RunHandle>,
): Result<RunHandle> {
  if (!signal || !launched.ok) return launched;
  const handle = launched.value;
  const abort = () => handle.send(ABORTED);
  signal.addEventListener("abort", abort, { once: true });
  void handle.result.finally(() => signal.removeEventListener("abort", abort));
  return launched;
}

/** Where a stored run goes on from: its checked snapshot, or its beginning if it never began. */
function resumePoint(
  pipeline: PipelineDefinition,
  run: { runId: string; definitionHash: string; options: Record<string, unknown> },
  {
    store,
    force,
    answers = [],
    inputs = [],
    control,
    inspect,
  }: Omit<ResumeOptions, "store"> & { store: StepStore },
  hash: string,
): Result<Launch> {
  const { runId } = run;
  const stored = store.getSnapshot(runId);
  const neverBegan =
    !stored.ok && stored.error.code === "Session/NoSnapshot" && store.lastSeq(runId) === 0;
  if (!stored.ok && !neverBegan) return stored;
  if (stored.ok) {
    const damaged = checkSnapshotShape(runId, stored.value.snapshot);
    if (damaged) return err(damaged);
  }
  const storedHash = stored.ok ? stored.value.definitionHash : run.definitionHash;
  const drift = storedHash !== hash;
  if (drift && !force) {
    const before = (run.options.definition ?? {}) as Record<string, string>;
    const changes = describeDrift(before, fingerprint(pipeline).parts);
    return err(
      new StagechartError(
        "Session/DefinitionDrift",
        `the pipeline changed since run ${runId} was saved: ${changes.join(", ") || "its compiled form differs"} (--force to resume anyway)`,
        { runId, changes },
      ),
    );
  }
  const ctx = (run.options.ctx ?? {}) as Record<string, unknown>;
  const request = { runId, ctx, answers, inputs, inspect, ...(control && { control }) };
  if (!stored.ok)
    return ok({
      ...request,
      start: {
        type: "RunStarted",
        payload: { ...started(pipeline, ctx), restart: true, forced: drift },
      },
    });
  return ok({
    ...request,
    snapshot: stored.value.snapshot as Snapshot<unknown>,
    start: {
      type: "RunResumed",
      payload: {
        pipelineId: pipeline.id,
        forced: drift,
        ...(answers.length && {
          answers: answers.map(({ proposalId, decision }) => ({ proposalId, decision })),
        }),
      },
    },
  });
}

const started = (pipeline: PipelineDefinition, ctx: Record<string, unknown>) =>
  runStartedPayload(pipeline, { ctx });

/** The run's lease, taken for a launch by a new owner; `Session/RunLocked` while another holds it. */
export function takeLease(
  store: StepStore,
  runId: string,
  definitionHash: string,
  leaseTtlMs = LEASE_TTL_MS,
): Result<DurableLaunch> {
  const owner = leaseOwner();
  const leased = store.acquireLease(runId, owner, leaseTtlMs, ownerIsGone);
  if (!leased.ok) return leased;
  return ok({ store, owner, leaseTtlMs, definitionHash });
}

/**
 * Opens `runId` on `store` for this process (`ownRun`) and launches it on the step store it
 * gives: the same run with the same guarantees on any store (every step one transaction, no
 * model or tool call before the steps that led to it are stored, one live owner). The launch is
 * returned once what it wrote so far is stored; its result settles once every write is stored
 * and the run is given up. A write that failed leaves the run `suspended` with the store's error,
 * resumable from its last stored step; a launch refused is reported once what it audited is
 * stored, or as the store's failure.
 */
export async function owning(
  store: RunStore,
  runId: string,
  options: { leaseTtlMs?: number; owner?: string },
  launch: (steps: StepStore) => Result<RunHandle>,
): Promise<Result<RunHandle>> {
  const owned = await storeCall(() =>
    store.ownRun(runId, { leaseTtlMs: options.leaseTtlMs, owner: options.owner }),
  );
  if (!owned.ok) return owned;
  const { steps, durable, close } = owned.value;
  const launched = launch(steps);
  if (!launched.ok) {
    const failure = await close();
    return failure ? err(failure) : launched;
  }
  // Its row and lease are stored before the launch returns: other processes see it live.
  await durable?.().catch(() => {});
  const result = launched.value.result.then(async (outcome) => {
    const failure = await close();
    if (!failure) return outcome;
    return { ...outcome, status: "suspended" as const, error: failure.toModelView() };
  });
  return ok(withResult(launched.value, result));
}

/** A store call that may throw or reject (a store failing under it), as a value. */
async function storeCall<T>(call: () => Promise<Result<T>>): Promise<Result<T>> {
  try {
    return await call();
  } catch (error) {
    return err(toStagechartError(error, "Session/StoreUnavailable"));
  }
}

function storeResult<T>(write: () => Result<T>): Result<T> {
  try {
    return write();
  } catch (error) {
    return err(toStagechartError(error, "Session/StoreUnavailable"));
  }
}
