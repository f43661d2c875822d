import type { InspectionEvent, Observer } from "xstate";
import type { PipelineEvent } from "../compiler/pipeline-context.js";
import type { JsonValue } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { ResumeInput } from "./ask-stages.js";
import type { Host } from "./host.js";
import type { GrantAnswer, RunHandle, RunResult } from "./launch.js";
import { holderIsLive, requestControl } from "./live-control.js";
import { reopenRun } from "./reopen.js";
import { resumeRun } from "./run.js";
import type { RunRecord } from "./run-records.js";
import type { RunStore } from "./store-port.js";

/** What a stored run is run with in this process: its pipeline and host, and what to close after. */
export interface PreparedRun {
  pipeline: PipelineDefinition;
  host: Host;
  /** Told every inspection event of the run's actors (the page that answered it, say). */
  inspect?: Observer<InspectionEvent>;
  close?(): Promise<void>;
}

/** What to do to a stored run: answers to what it waits for, and a control event. */
export interface RunControlRequest {
  /** Answers to the grant requests it waits for, by proposal id. */
  answers?: readonly GrantAnswer[];
  /** Answers to the ask stages it waits for. */
  inputs?: readonly ResumeInput[];
  /** CANCEL, OVERRIDE or REDO. A REDO of a run that ended `done` reopens it. */
  control?: PipelineEvent;
  /** Reopen a run that ended `done` (`reopenable` pipelines): from `stage`, else where it ended. */
  reopen?: { stage?: string };
  /** Go on even though the pipeline changed since the run was stored. */
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
  /** The run was resumed (or reopened) here with the request; `done` settles when it stops. */
  | { runId: string; outcome: "resumed"; handle: RunHandle; done: Promise<RunResult> };

export interface RunControlOptions {
  store: RunStore;
  /**
   * The pipeline and host a stored run goes on with here (its stored settings say which).
   * Without it, only runs a live process owns can be acted on (`Session/RunNotLive` otherwise).
   */
  prepare?(run: RunRecord): Promise<Result<PreparedRun>>;
  /** Who asks, for the audit log of a live run's control request. */
  by?: string;
  /** How long to wait for a live run's owner to take a control event. */
  timeoutMs?: number;
}

/**
 * The one way to act on a stored run — approve or deny a grant, answer an ask stage, cancel,
 * override, redo — for the command line, the inspect page and an embedding app alike. A control
 * event for a run another live process owns is handed to that process through the store's
 * control queue (`requestControl`); anything else resumes the run here with the request
 * (`resumeRun`, or `reopenRun` for a REDO of a run that ended done).
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

export function createRunControl(options: RunControlOptions): RunControl {
  const { store } = options;
  const act = async (
    runId: string,
    request: RunControlRequest,
  ): Promise<Result<ControlOutcome>> => {
    const run = await store.getRun(runId);
    if (!run.ok) return run;
    const { control } = request;
    if (control && holderIsLive(await store.leaseHolder(runId))) {
      const by = request.by ?? options.by;
      const applied = await requestControl(store, runId, control, {
        ...(by && { by }),
        ...(options.timeoutMs && { timeoutMs: options.timeoutMs }),
      });
      if (applied.ok) return ok({ runId, outcome: "applied", requestId: applied.value.id });
      // It stopped being live before its owner took the request: go on with it here.
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
    const reopened =
      run.value.status === "done" && (request.reopen || control?.type === "REDO")
        ? (request.reopen?.stage ?? (control?.type === "REDO" ? control.stage : undefined))
        : false;
    const launched =
      reopened !== false
        ? await reopenRun(pipeline, runId, {
            host,
            store,
            ...(reopened !== undefined && { stage: reopened }),
            reason: request.reason ?? "",
            by: request.by ?? options.by ?? "a control request",
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
  };
  return runControlOver(act);
}

/** A `RunControl` whose every request goes through `act` (a wrapper of another's, say). */
export function runControlOver(act: RunControl["act"]): RunControl {
  return {
    act,
    approve: (runId, proposalId, decision) => act(runId, { answers: [{ proposalId, decision }] }),
    answer: (runId, stageExecutionId, value) =>
      act(runId, { inputs: [{ value, stageExecutionId }] }),
    send: (runId, event) => act(runId, { control: event }),
  };
}
