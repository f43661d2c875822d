import type { PipelineEvent } from "../compiler/pipeline-context.js";
import type { JsonValue } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { ResumeInput } from "./ask-stages.js";
import type { Host } from "./host.js";
import type { GrantAnswer, RunHandle, RunInspection, RunResult } from "./launch.js";
import { holderIsLive, requestControl } from "./live-control.js";
import { reopenRun } from "./reopen.js";
import { resumeRun } from "./run.js";
import type { RunRecord } from "./run-records.js";
import type { RunStore } from "./store-port.js";

/** What a stored run is run with in this process: its pipeline and host, and what to close after. */
export interface PreparedRun {
  pipeline: PipelineDefinition;
  host: Host;
  /** Told every inspection event of the run's actors (and with `modelDelta`, each piece of a streaming reply) (the page that answered it, say). */
  inspect?: RunInspection;
  close?(): Promise<void>;
}

/** What to do to a stored run: answers to what it waits for, and a control event. */
export interface RunControlRequest {
  /** Answers to the grant requests it waits for, by proposal id. */
  answers?: readonly GrantAnswer[];
  /** Answers to the ask stages it waits for. */
  inputs?: readonly ResumeInput[];
  /**
   * CANCEL, OVERRIDE or REDO. A CANCEL of a run no worker took yet cancels it in place; a REDO of
   * a run that ended `done` reopens it.
   */
  control?: PipelineEvent;
  /** Reopen a run that ended `done` (`reopenable` pipelines): from `stage`, else where it ended. */
  reopen?: { stage?: string };
  /**
   * Go on even though the pipeline changed since the run was stored, or the store lost steps of
   * it (a CANCEL goes on without it: it runs nothing of what was lost).
   */
  force?: boolean;
  /** Why, for a reopened run's audit (a reopen needs one). */
  reason?: string;
  /** Who asks, for the audit (the control's `by` otherwise). */
  by?: string;
}

/** How a request was carried out. */
export type ControlOutcome =
  /** The live process that owns the run took the control event and applied it. */
  | { runId: string; outcome: "applied"; requestId: number }
  /** A CANCEL of a run no worker took yet: cancelled in place, nothing of it ran. */
  | { runId: string; outcome: "cancelled"; run: RunRecord }
  /** The run was resumed (or reopened) here with the request; `done` settles when it stops. */
  | { runId: string; outcome: "resumed"; handle: RunHandle; done: Promise<RunResult> };

export interface RunControlOptions {
  store: RunStore;
  /**
   * The pipeline and host a stored run goes on with here (its stored settings say which).
   * Without it, only runs a live process owns can be acted on (`Session/RunNotLive` otherwise).
   */
  prepare?(run: RunRecord): Promise<Result<PreparedRun>>;
  /** Told just before a control event is handed to the live process that owns the run. */
  handingOver?(runId: string, event: PipelineEvent): void;
  /** Who asks, for the audit log of a live run's control request. */
  by?: string;
  /** How long to wait for a live run's owner to take a control event. */
  timeoutMs?: number;
}

/**
 * The one way to act on a stored run — approve or deny a grant, answer an ask stage, cancel,
 * override, redo — for the command line, the inspect page and an embedding app alike. `act`
 * carries out a request, the others are its common cases.
 */
export interface RunControl {
  act(runId: string, request: RunControlRequest): Promise<Result<ControlOutcome>>;
  approve(
    runId: string,
    proposalId: string,
    decision: "approve" | "deny",
  ): Promise<Result<ControlOutcome>>;
  answer(
    runId: string,
    stageExecutionId: string,
    value: JsonValue,
  ): Promise<Result<ControlOutcome>>;
  send(runId: string, event: PipelineEvent): Promise<Result<ControlOutcome>>;
}

/**
 * The run control over a store, in this order: a CANCEL of a run no worker took yet cancels it
 * in place (`cancelQueuedRun`); a run whose steps the store lost is refused with the loss
 * (`Session/StoreDamaged`) unless forced or cancelled; a control event for a run another live
 * process owns is handed to that process through the store's control queue (`requestControl`),
 * and applied by it; anything else resumes the run here with the request (`resumeRun`, or
 * `reopenRun` for a redo of a run that ended done), with what `prepare` gives.
 */
export function createRunControl(options: RunControlOptions): RunControl {
  const { store } = options;
  const by = (request: RunControlRequest) => request.by ?? options.by;
  return runControlOver(async (runId, request) => {
    const run = await store.getRun(runId);
    if (!run.ok) return run;
    const { control } = request;
    if (control?.type === "CANCEL" && run.value.status === "queued") {
      const cancelled = await cancelledInPlace(store, runId, control);
      if (!cancelled.ok || cancelled.value) return cancelled as Result<ControlOutcome>;
    }
    const lost = ((await store.lostSteps?.()) ?? []).find((e) => e.context.runId === runId);
    if (lost && !request.force && control?.type !== "CANCEL") return err(lost);
    if (control && holderIsLive(await store.leaseHolder(runId))) {
      options.handingOver?.(runId, control);
      const asker = by(request);
      const applied = await requestControl(store, runId, control, {
        ...(asker && { by: asker }),
        ...(options.timeoutMs && { timeoutMs: options.timeoutMs }),
      });
      if (applied.ok) return ok({ runId, outcome: "applied", requestId: applied.value.id });
      // It stopped being live before its owner took the request (withdrawn): go on with it here.
      const gone =
        applied.error.code === "Session/RunNotLive" || applied.error.context.reason === "not-live";
      if (!gone) return applied;
    }
    if (!options.prepare)
      return err(
        new StagechartError(
          "Session/RunNotLive",
          `run ${runId} is not live, and this control cannot resume it here`,
          { runId },
        ),
      );
    const prepared = await options.prepare(run.value);
    if (!prepared.ok) return prepared;
    const { pipeline, host, inspect, close } = prepared.value;
    const redo = control?.type === "REDO" ? control.stage : undefined;
    const reopening = run.value.status === "done" && (request.reopen || redo !== undefined);
    const stage = request.reopen?.stage ?? redo;
    const launched = reopening
      ? await reopenRun(pipeline, runId, {
          host,
          store,
          ...(stage !== undefined && { stage }),
          reason: request.reason ?? "",
          by: by(request) ?? "a control request",
          ...(inspect && { inspect }),
        })
      : await resumeRun(pipeline, runId, {
          host,
          store,
          ...(request.answers && { answers: request.answers }),
          ...(request.inputs && { inputs: request.inputs }),
          ...(control && { control }),
          ...(request.force && { force: true }),
          ...(inspect && { inspect }),
        });
    if (!launched.ok) {
      await close?.();
      return launched;
    }
    const handle = launched.value;
    const done = handle.result.finally(() => close?.());
    return ok({ runId, outcome: "resumed", handle, done });
  });
}

/** A run control whose common cases are requests to `act`. */
export function runControlOver(act: RunControl["act"]): RunControl {
  return {
    act,
    approve: (runId, proposalId, decision) => act(runId, { answers: [{ proposalId, decision }] }),
    answer: (runId, stageExecutionId, value) =>
      act(runId, { inputs: [{ value, stageExecutionId }] }),
    send: (runId, event) => act(runId, { control: event }),
  };
}

/**
 * A queued run cancelled where it is stored, before any worker takes it: the outcome; undefined
 * when it is no longer queued without a lease (a worker, or a `resume`, took it meanwhile: its
 * owner is asked instead, or it is resumed to cancel it).
 */
async function cancelledInPlace(
  store: RunStore,
  runId: string,
  cancel: Extract<PipelineEvent, { type: "CANCEL" }>,
): Promise<Result<ControlOutcome | undefined>> {
  try {
    const cancelled = await store.cancelQueuedRun(runId, cancel.reason);
    return ok(cancelled.ok ? { runId, outcome: "cancelled", run: cancelled.value } : undefined);
  } catch (error) {
    if (error instanceof StagechartError) return err(error);
    throw error;
  }
}
