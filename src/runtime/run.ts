import { randomUUID } from "node:crypto";
import {
  type Actor,
  type AnyStateMachine,
  createActor,
  type InspectionEvent,
  type Observer,
  type Snapshot,
  toPromise,
} from "xstate";
import { describeDrift, fingerprint } from "../compiler/definition-hash.js";
import {
  createPipelineMachine,
  type PipelineContext,
  type PipelineEvent,
  type PipelineOutput,
  type RunStatus,
} from "../compiler/pipeline-machine.js";
import type { GrantDecision } from "../compiler/stage-types.js";
import type { JsonValue, StageResult } from "../definitions/contract.js";
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
import { EventFeed } from "./event-feed.js";
import type { Host } from "./host.js";
import {
  LEASE_TTL_MS,
  leaseOwner,
  ownerIsGone,
  type RunStore,
  StepRecorder,
} from "./persistence.js";
import { rulesGrantPolicy } from "./rules.js";
import { checkContext, refuseControl } from "./run-checks.js";
import { stageMachineFor } from "./run-stage.js";
import {
  describeWaits,
  isQuiescent,
  type ParkedStage,
  type RunWait,
  type Survey,
  survey,
} from "./suspension.js";

export type { RunWait };

export interface RunOptions {
  host: Host;
  /** Makes the run durable: every step is committed here, and the run can be resumed. */
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
  /** Told every inspection event of the run's actors (e.g. `stagechart inspect`'s stream). */
  inspect?: Observer<InspectionEvent>;
}

export interface RunResult {
  runId: string;
  /** `suspended`: the run was stopped before its end and can be resumed. */
  status: RunStatus | "suspended";
  /** What a suspended run waits for: grant requests to answer, deferred gates to check again. */
  waiting?: RunWait[];
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
  if (options.task !== undefined && options.ctx?.task !== undefined)
    return err(
      new StagechartError(
        "Validation/RunContextInvalid",
        "the task is given twice (as task and as ctx.task); give it once",
      ),
    );
  const ctx = { ...options.ctx, ...(options.task !== undefined && { task: options.task }) };
  const invalid = checkContext(pipeline, ctx);
  if (invalid) return err(invalid);
  const { store } = options;
  if (!store)
    return launch(pipeline, options.host, {
      runId,
      ctx,
      inspect: options.inspect,
      start: { type: "RunStarted", payload: { pipelineId: pipeline.id, ctx } },
    });

  const { hash, parts } = fingerprint(pipeline);
  const created = store.createRun({
    runId,
    pipelineId: pipeline.id,
    definitionHash: hash,
    options: { ...options.resumeWith, ctx, definition: parts },
  });
  if (!created.ok) return created;
  return launchDurable(pipeline, options.host, store, hash, {
    runId,
    ctx,
    inspect: options.inspect,
    ...(options.leaseTtlMs !== undefined && { leaseTtlMs: options.leaseTtlMs }),
    start: { type: "RunStarted", payload: { pipelineId: pipeline.id, ctx } },
  });
}

export interface ResumeOptions {
  host: Host;
  store: RunStore;
  /** Resume even though the pipeline changed since the run's snapshot. */
  force?: boolean;
  /** How long the run's lease lives without renewal (renewed every third of it). */
  leaseTtlMs?: number;
  /** Answers to the grant requests a suspended run waits for, by proposal id. */
  answers?: readonly GrantAnswer[];
  /** Told every inspection event of the run's actors (e.g. `stagechart inspect`'s stream). */
  inspect?: Observer<InspectionEvent>;
}

export interface GrantAnswer {
  proposalId: string;
  decision: GrantDecision;
  /** Who answered, for the audit log. */
  by?: string;
}

/**
 * Continues a stored run from its latest snapshot (DESIGN.md §6): calls in flight at the crash
 * run again with the same idempotency keys, everything recorded is reused, backoff deadlines and
 * pending grant requests carry on. A changed pipeline is `Session/DefinitionDrift` unless forced.
 */
export function resumeRun(
  pipeline: PipelineDefinition,
  runId: string,
  options: ResumeOptions,
): Result<RunHandle> {
  const { store } = options;
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
  const stored = store.getSnapshot(runId);
  if (!stored.ok) return stored;
  const { hash, parts } = fingerprint(pipeline);
  if (stored.value.definitionHash !== hash && !options.force) {
    const before = (run.value.options.definition ?? {}) as Record<string, string>;
    const changes = describeDrift(before, parts);
    return err(
      new StagechartError(
        "Session/DefinitionDrift",
        `the pipeline changed since run ${runId} was saved: ${changes.join(", ") || "its compiled form differs"} (--force to resume anyway)`,
        { runId, changes },
      ),
    );
  }
  const ctx = (run.value.options.ctx ?? {}) as Record<string, unknown>;
  return launchDurable(pipeline, options.host, store, hash, {
    runId,
    ctx,
    snapshot: stored.value.snapshot as Snapshot<unknown>,
    answers: options.answers ?? [],
    inspect: options.inspect,
    ...(options.leaseTtlMs !== undefined && { leaseTtlMs: options.leaseTtlMs }),
    start: {
      type: "RunResumed",
      payload: {
        pipelineId: pipeline.id,
        forced: stored.value.definitionHash !== hash,
        ...(options.answers?.length && {
          answers: options.answers.map(({ proposalId, decision }) => ({ proposalId, decision })),
        }),
      },
    },
  });
}

interface Launch {
  runId: string;
  ctx: Record<string, unknown>;
  snapshot?: Snapshot<unknown>;
  /** Delivered to the restored stages that wait for them, once the run is going again. */
  answers?: readonly GrantAnswer[];
  inspect?: Observer<InspectionEvent> | undefined;
  start: { type: "RunStarted" | "RunResumed"; payload: Record<string, unknown> };
}

/** A run whose every step is committed to the store, holding the run's lease while it runs. */
function launchDurable(
  pipeline: PipelineDefinition,
  host: Host,
  store: RunStore,
  definitionHash: string,
  launchOptions: Launch & { leaseTtlMs?: number },
): Result<RunHandle> {
  const { runId, leaseTtlMs = LEASE_TTL_MS } = launchOptions;
  const owner = leaseOwner();
  const leased = store.acquireLease(runId, owner, leaseTtlMs, ownerIsGone);
  if (!leased.ok) return leased;
  const recorder = new StepRecorder(store, runId, definitionHash);
  const durableHost: Host = { ...host, audit: recorder, journal: store, transcripts: store };
  // Once the lease is lost or the store fails, this process must not write for the run again:
  // it stops, and the run is left to whoever holds it now (or to a later resume).
  let lost: StagechartError | undefined;
  let stop = () => {};
  const giveUp = (error: unknown) => {
    lost ??= toStagechartError(error, "Session/StoreUnavailable");
    stop();
  };
  const renewal = setInterval(() => {
    const renewed = store.renewLease(runId, owner, leaseTtlMs);
    if (!renewed.ok) giveUp(renewed.error);
  }, leaseTtlMs / 3);
  renewal.unref();
  // A stopped actor's snapshot says "stopped" and would not run again: keep the last live one.
  const commit = (actor: Actor<AnyStateMachine>) => {
    if (lost) return;
    try {
      recorder.commit(
        actor.getSnapshot().status === "stopped" ? undefined : actor.getPersistedSnapshot(),
      );
    } catch (error) {
      giveUp(error);
    }
  };
  const launched = launch(pipeline, durableHost, launchOptions, commit);
  if (!launched.ok) {
    clearInterval(renewal);
    store.releaseLease(runId, owner);
    return launched;
  }
  const handle = launched.value;
  stop = () => handle.actor.stop();
  const result = handle.result.then((outcome): RunResult => {
    clearInterval(renewal);
    commit(handle.actor);
    if (!lost) {
      try {
        store.updateRun(runId, {
          status: outcome.status,
          ...(outcome.error && { error: outcome.error }),
          ...(outcome.output !== undefined && { output: outcome.output }),
        });
        store.releaseLease(runId, owner);
      } catch (error) {
        lost = toStagechartError(error, "Session/StoreUnavailable");
      }
    }
    return lost ? { ...outcome, error: lost.toModelView() } : outcome;
  });
  return ok({ ...handle, result });
}

function launch(
  pipeline: PipelineDefinition,
  baseHost: Host,
  { runId, ctx, snapshot, answers = [], inspect, start }: Launch,
  onStep?: (actor: Actor<AnyStateMachine>) => void,
): Result<RunHandle> {
  const feed = new EventFeed();
  const host: Host = { ...baseHost, audit: feed.tee(baseHost.audit, runId) };
  let waiting: RunWait[] | undefined;
  let settleQueued = false;
  const parkedStages = new Set<unknown>();
  // Once the whole chain of macrosteps a change set off has settled: commit, so the root's
  // snapshot and the events its actions emitted belong to the same moment; then, if only
  // parked stages are left, nothing will happen until somebody answers: suspend the run.
  const queueSettle = () => {
    if (settleQueued) return;
    settleQueued = true;
    queueMicrotask(() => {
      settleQueued = false;
      if (actor.getSnapshot().status !== "active") return;
      onStep?.(actor);
      if (parkedStages.size === 0) return;
      const now = survey(actor);
      if (!isQuiescent(now)) return;
      waiting = describeWaits(now.parked);
      actor.stop();
    });
  };
  const actor = createActor(compilePipeline(pipeline, host), {
    input: { runId, ctx },
    ...(snapshot && { snapshot }),
    inspect: (event: InspectionEvent) => {
      inspect?.next?.(event);
      if (event.type !== "@xstate.snapshot") return;
      // Only a run with a parked stage can be quiescent: the walk of its actor tree waits till then.
      const snap = event.snapshot as { status?: string; hasTag?(tag: string): boolean };
      if (snap.status === "active" && snap.hasTag?.("suspended")) parkedStages.add(event.actorRef);
      else parkedStages.delete(event.actorRef);
      queueSettle();
    },
  });
  const restored = snapshot ? restoredStages(actor, runId, pipeline.id) : ok(noStages);
  if (!restored.ok) return restored;
  const answerable = [...restored.value.parked, ...restored.value.asking];
  const unknown = answers.filter(
    (a) =>
      !answerable.some(
        ({ wait }) => wait.kind === "grant" && wait.request.proposalId === a.proposalId,
      ),
  );
  if (unknown.length > 0) return err(noPendingGrant(runId, unknown, answerable));

  host.audit.emit({ type: start.type, runId, payload: start.payload });
  const result = toPromise(actor).then(
    // A stopped actor completes without output: the run is not over, it waits to be resumed.
    (output: PipelineOutput | undefined) =>
      output ? finish(host.audit, runId, output) : suspended(host.audit, runId, actor, waiting),
    (error: unknown) =>
      finish(host.audit, runId, {
        status: "failed",
        results: {},
        error: toStagechartError(error, "ExtensionHost/LifecycleFailure").toModelView(),
      }),
  );
  void result.finally(() => feed.close());
  actor.start();
  for (const { actor: stage, wait } of answerable) {
    const answer = answers.find(
      (a) => wait.kind === "grant" && a.proposalId === wait.request.proposalId,
    );
    if (answer) stage.send({ type: "GRANT_ANSWER", ...answer });
    else if (restored.value.parked.some((p) => p.actor === stage)) stage.send({ type: "RECHECK" });
  }
  queueSettle();
  return ok({
    runId,
    actor,
    result,
    events: () => feed.iterate(),
    send: (event) => {
      const refused = refuseControl(
        pipeline,
        actor.getSnapshot().context as PipelineContext,
        event,
      );
      if (refused) return err(refused);
      actor.send(event);
      return ok(undefined);
    },
    stop: () => actor.stop(),
  });
}

const noStages: Survey = { parked: [], asking: [], busy: false };

/** The stages of a restored snapshot that wait; a snapshot that does not restore is corrupt. */
function restoredStages(
  actor: Actor<AnyStateMachine>,
  runId: string,
  pipelineId: string,
): Result<Survey> {
  const corrupt = (error: unknown) =>
    err(
      new StagechartError(
        "Session/SnapshotCorrupt",
        `run ${runId}'s snapshot does not restore into ${pipelineId}: ${toStagechartError(error, "Session/SnapshotCorrupt").message}`,
        { runId },
      ),
    );
  const state = actor.getSnapshot();
  if (state.status === "error") return corrupt(state.error);
  try {
    return ok(survey(actor));
  } catch (error) {
    return corrupt(error);
  }
}

function noPendingGrant(
  runId: string,
  unknown: readonly GrantAnswer[],
  parked: readonly ParkedStage[],
): StagechartError {
  const pending = describeWaits(parked).flatMap((w) => (w.kind === "grant" ? [w.proposalId] : []));
  return new StagechartError(
    "Session/NoPendingGrant",
    `run ${runId} has no grant request ${unknown.map((a) => a.proposalId).join(", ")} waiting${
      pending.length ? `; it waits for ${pending.join(", ")}` : ""
    }`,
    { runId, pending },
  );
}

function suspended(
  audit: AuditSink,
  runId: string,
  actor: Actor<AnyStateMachine>,
  waiting: RunWait[] | undefined,
): RunResult {
  audit.emit({
    type: "RunSuspended",
    runId,
    payload: waiting ? { reason: "waiting", waiting } : { reason: "stopped" },
  });
  const context = actor.getSnapshot().context as PipelineContext;
  return { runId, status: "suspended", results: context.results, ...(waiting && { waiting }) };
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

function collectHooks(pipeline: PipelineDefinition): Host["hooks"] {
  const nested = Object.values(pipeline.stages).flatMap((stage) =>
    stage.kind === "pipeline" ? Object.entries(collectHooks(stage.pipeline)) : [],
  );
  return { ...Object.fromEntries(nested), ...pipeline.hooks };
}
