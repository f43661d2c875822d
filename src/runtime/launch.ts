import {
  type Actor,
  type AnyActorRef,
  type AnyStateMachine,
  createActor,
  type InspectionEvent,
  type Observer,
  type Snapshot,
  toPromise,
} from "xstate";
import type { InputAnswer } from "../compiler/ask-stage.js";
import type {
  CarriedContext,
  PipelineContext,
  PipelineEvent,
  PipelineOutput,
  RunStatus,
} from "../compiler/pipeline-context.js";
import type { PipelineMachine } from "../compiler/pipeline-machine.js";
import { recordOf } from "../compiler/stage-table.js";
import type { GrantDecision } from "../compiler/stage-types.js";
import type { JsonValue, StageResult, TranscriptEntry } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import {
  type ErrorView,
  err,
  ok,
  type Result,
  StagechartError,
  toStagechartError,
} from "../errors.js";
import type { AuditEvent, AuditSink } from "../events/audit.js";
import type { ModelDelta, RunEvent } from "../events/run-events.js";
import { watchMachines } from "./actor-watch.js";
import { type ResumeInput, routeInputs } from "./ask-stages.js";
import { EventFeed } from "./event-feed.js";
import { type Host, sandboxNotice } from "./host.js";
import { refuseControl } from "./run-checks.js";
import { compileRunMachine, runHostFor, sharedRunMachine } from "./run-machine.js";
import { currentShape, damagedSnapshot, restoreProblem } from "./snapshot-shape.js";
import {
  describeWaits,
  isQuiescent,
  type ParkedStage,
  type RunWait,
  type Survey,
  survey,
} from "./suspension.js";
import type { TranscriptStore } from "./transcripts.js";
import { transitionNotifier } from "./transition-notices.js";

/** Running a compiled pipeline in this process: start or restore it, watch it, settle its result. */

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
  /**
   * The running pipeline: a plain XState actor. Once `result` has settled the handle lets go of
   * it (undefined), so a handle kept after the run does not keep the stopped actor tree.
   */
  readonly actor: Actor<AnyStateMachine> | undefined;
  /** Settles when the run ends, whatever the outcome; never rejects for a failed run. */
  result: Promise<RunResult>;
  /** Every audit event of the run, live, ending when the run ends. */
  /**
   * The run's audit events from its first, then as they come, with the pieces of each model
   * reply as it streams between them (`ModelDelta`, live only: sent while this is read);
   * `{deltas: false}`: the audit events alone.
   */
  events(options: { deltas: false }): AsyncIterable<AuditEvent>;
  events(options?: { deltas?: boolean }): AsyncIterable<RunEvent>;
  /**
   * A stage execution's transcript as the run wrote it (by its id, `<runId>/<stage>/<n>`), during
   * the run and after: an in-memory run's own, a stored run's from its store; empty for an
   * execution the run has not had.
   */
  transcript(stageExecutionId: string): TranscriptEntry[];
  /** OVERRIDE, REDO or CANCEL; an override to a stage the topology cannot reach is refused. */
  send(event: PipelineEvent): Result<void>;
  stop(): void;
}

/**
 * What watches a run's actors (an inspect server's stream): every inspection event, and, when it
 * has `modelDelta`, each piece of a model reply as it streams, as `run.events()` gets it (keys
 * removed, live only).
 */
export type RunInspection = Observer<InspectionEvent> & {
  modelDelta?: (delta: ModelDelta) => void;
};

export interface GrantAnswer {
  proposalId: string;
  decision: GrantDecision;
  /** Who answered, for the audit log. */
  by?: string;
}

export interface Launch {
  runId: string;
  ctx: Record<string, unknown>;
  snapshot?: Snapshot<unknown>;
  /** Delivered to the restored stages that wait for them, once the run is going again. */
  answers?: readonly GrantAnswer[];
  /** Answers to the ask stages the run waits for, checked against their schemas first. */
  inputs?: readonly ResumeInput[];
  /** Sent once the run is going again; one the run would refuse refuses the launch instead. */
  control?: PipelineEvent;
  /** Told every inspection event of the run's actors (and the pieces of replies, if it takes them). */
  inspect?: RunInspection | undefined;
  /** A reopened run's context before it ended done; its pipeline's entry is the stage redone. */
  carried?: CarriedContext;
  /** What the run stored before this launch (a resumed run's events), for its budget and spans. */
  spentBefore?: () => readonly AuditEvent[];
  /**
   * Where the handle reads the run's transcripts (the host's by default): a durable run's handle
   * reads its store's, not through the host's, whose failure path holds the actor.
   */
  transcripts?: TranscriptStore;
  /**
   * The host the run was started with, when `launch` is given one built for the run (a durable
   * run's, with its store's journal): the runs started on one host share its machine.
   */
  startedOn?: Host;
  start: { type: "RunStarted" | "RunResumed" | "RunReopened"; payload: Record<string, unknown> };
}

/**
 * Creates the run's actor (from `snapshot` when given), refuses answers and a control event it
 * cannot take before anything is emitted, then starts it.
 */
export function launch(
  pipeline: PipelineDefinition,
  baseHost: Host,
  launchOptions: Launch,
  onStep?: (actor: Actor<AnyStateMachine>) => void,
): Result<RunHandle> {
  const {
    runId,
    ctx,
    carried,
    snapshot,
    answers = [],
    inputs = [],
    control,
    inspect,
    start,
  } = launchOptions;
  const feed = new EventFeed();
  let before: readonly AuditEvent[] | undefined;
  const storedBefore = () => {
    before ??= launchOptions.spentBefore?.() ?? [];
    return before;
  };
  const traced = baseHost.tracing?.watch(baseHost.audit, storedBefore);
  const host: Host = {
    ...baseHost,
    audit: feed.tee(traced ?? baseHost.audit, runId),
    modelDeltas: inspect?.modelDelta
      ? {
          wanted: () => true,
          tell: (delta) => {
            feed.delta(delta);
            inspect.modelDelta?.(delta);
          },
        }
      : { wanted: () => feed.readsDeltas(), tell: (delta) => feed.delta(delta) },
    ...(traced && baseHost.tracing?.content && { traceContent: traced.content }),
  };
  let waiting: RunWait[] | undefined;
  let settleQueued = false;
  const parkedStages = new Set<unknown>();
  const notifier = transitionNotifier(pipeline, host, runId);
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
      notifier.notify(actor);
      if (parkedStages.size === 0) return;
      const now = survey(actor);
      if (!isQuiescent(now)) return;
      waiting = describeWaits(now.parked);
      actor.stop();
    });
  };
  const spent = pipeline.budget ? storedBefore() : [];
  const runHost = runHostFor(pipeline, host, spent);
  const { machine, release } = sharedRunMachine(
    pipeline,
    launchOptions.startedOn ?? baseHost,
    runHost,
    runId,
  );
  let actor: Actor<PipelineMachine>;
  try {
    actor = createActor(machine, {
      input: { runId, ctx, ...(carried && { carried }) },
      ...(snapshot !== undefined && { snapshot: currentShape(snapshot) as Snapshot<unknown> }),
      ...(inspect && { inspect }),
    });
  } catch (error) {
    release();
    throw error;
  }
  const checked = takenAsked(pipeline, actor, { runId, snapshot, answers, inputs, control });
  if (!checked.ok) {
    release();
    return checked;
  }
  const { restored, answerable, routed } = checked.value;
  // Watched once the launch is taken: a refused one must not settle (and store) anything.
  watchMachines(actor, (machine, snapshot) => {
    // Only a run with a parked stage can be quiescent: the walk of its actor tree waits till then.
    if (snapshot?.status === "active" && snapshot.hasTag?.("suspended")) parkedStages.add(machine);
    else parkedStages.delete(machine);
    queueSettle();
  });

  host.audit.emit({ type: start.type, runId, payload: start.payload });
  const unsandboxed = sandboxNotice(host);
  if (unsandboxed) host.audit.emit({ type: "SandboxUnavailable", runId, payload: unsandboxed });
  const result = toPromise(actor).then(
    // A stopped actor completes without output: the run is not over, it waits to be resumed.
    async (output: PipelineOutput | undefined) => {
      notifier.notify(actor);
      await notifier.settled();
      return output
        ? finish(host.audit, runId, output)
        : suspended(host.audit, runId, actor, waiting);
    },
    (error: unknown) =>
      finish(host.audit, runId, {
        status: "failed",
        results: {},
        error: toStagechartError(error, "ExtensionHost/LifecycleFailure").toModelView(),
      }),
  );
  const live: LiveActor = { actor };
  void result.finally(() => {
    feed.close();
    live.actor = undefined;
    release();
  });
  actor.start();
  for (const { actor: stage, wait } of answerable) {
    const answer = answers.find(
      (a) => wait.kind === "grant" && a.proposalId === wait.request.proposalId,
    );
    const input = routed.find((r) => r.actor === stage);
    if (answer) stage.send({ type: "GRANT_ANSWER", ...answer });
    else if (input) stage.send({ type: "INPUT_ANSWER", ...input.answer });
    else if (restored.parked.some((p) => p.actor === stage)) stage.send({ type: "RECHECK" });
  }
  if (control) actor.send(control);
  queueSettle();
  const transcripts = launchOptions.transcripts ?? host.transcripts;
  return ok(handleOf(pipeline, runId, live, result, feed, transcripts));
}

/**
 * What a launch would refuse of what it asks (an answer no restored stage waits for, an input
 * none takes, a control event the run cannot take) or of its snapshot (one that does not
 * restore), found on an actor that is never started: nothing runs and nothing is emitted.
 */
export function refusalOf(
  pipeline: PipelineDefinition,
  host: Host,
  asked: Pick<Launch, "runId" | "ctx" | "snapshot" | "answers" | "inputs" | "control">,
): StagechartError | undefined {
  const { runId, ctx, snapshot } = asked;
  const actor = createActor(compileRunMachine(pipeline, host), {
    input: { runId, ctx },
    ...(snapshot !== undefined && { snapshot: currentShape(snapshot) as Snapshot<unknown> }),
  });
  const checked = takenAsked(pipeline, actor, asked);
  return checked.ok ? undefined : checked.error;
}

/** An input answer with the ask stage it goes to. */
type RoutedInput = { actor: AnyActorRef; answer: InputAnswer };

/** The restored actor's waiting stages and where the inputs go, once all that is asked is taken. */
function takenAsked(
  pipeline: PipelineDefinition,
  actor: Actor<AnyStateMachine>,
  {
    runId,
    snapshot,
    answers = [],
    inputs = [],
    control,
  }: Pick<Launch, "runId" | "snapshot" | "answers" | "inputs" | "control">,
): Result<{
  restored: Survey;
  answerable: ParkedStage[];
  routed: RoutedInput[];
}> {
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
  const routed = routeInputs(runId, inputs, answerable);
  if (!routed.ok) return routed;
  const refused =
    control && refuseControl(pipeline, actor.getSnapshot().context as PipelineContext, control);
  if (refused) return err(refused);
  return ok({ restored: restored.value, answerable, routed: routed.value });
}

/** The run's actor while the run is live; dropped once its result settles. */
type LiveActor = { actor: Actor<AnyStateMachine> | undefined };

/**
 * Built outside `launch`, so its closures hold only what they name: closures made in one scope
 * share that scope's variables, and `launch`'s hold the actor tree.
 */
function handleOf(
  pipeline: PipelineDefinition,
  runId: string,
  live: LiveActor,
  result: Promise<RunResult>,
  feed: EventFeed,
  transcripts: TranscriptStore,
): RunHandle {
  return {
    runId,
    get actor() {
      return live.actor;
    },
    result,
    events: ((options?: { deltas?: boolean }) =>
      feed.iterate(options?.deltas ?? true)) as RunHandle["events"],
    transcript: (stageExecutionId) => transcripts.read(stageExecutionId),
    send: (event) => {
      if (!live.actor) return ok(undefined);
      const context = live.actor.getSnapshot().context as PipelineContext;
      const refused = refuseControl(pipeline, context, event);
      if (refused) return err(refused);
      live.actor.send(event);
      return ok(undefined);
    },
    stop: () => live.actor?.stop(),
  };
}

const noStages: Survey = { parked: [], asking: [], busy: false };

/**
 * The stages of a restored snapshot that wait. A snapshot that does not restore, or whose active
 * states lack the actors they invoke (nothing would ever move them on), is corrupt.
 */
function restoredStages(
  actor: Actor<AnyStateMachine>,
  runId: string,
  pipelineId: string,
): Result<Survey> {
  const corrupt = (problem: string) =>
    err(damagedSnapshot(runId, `it does not restore into ${pipelineId}: ${problem}`));
  const problem = restoreProblem(actor);
  if (problem !== undefined) return corrupt(problem);
  try {
    return ok(survey(actor));
  } catch (error) {
    return corrupt(toStagechartError(error, "Session/SnapshotCorrupt").message);
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
  return {
    runId,
    status: "suspended",
    results: recordOf(context.results),
    ...(waiting && { waiting }),
  };
}

function finish(
  audit: AuditSink,
  runId: string,
  output: Omit<PipelineOutput, "result"> & Partial<PipelineOutput>,
): RunResult {
  audit.emit({
    type: endEventOf(output.status),
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

/** The audit event a run ends with. */
export const endEventOf = (status: RunStatus) =>
  status === "done" ? "RunCompleted" : status === "cancelled" ? "RunCancelled" : "RunFailed";
