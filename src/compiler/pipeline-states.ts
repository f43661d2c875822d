import type { OverrideNote, StageResult } from "../definitions/contract.js";
import {
  CANCEL,
  DONE,
  ENDS,
  FAIL,
  type PipelineDefinition,
  type PipelineStage,
  type Target,
} from "../definitions/pipeline-types.js";
import type { ErrorView } from "../errors.js";
import type { AuditEventInput } from "../events/audit.js";
import type { PipelineContext, PipelineOutput } from "./pipeline-context.js";
import { lookup } from "./stage-table.js";

const GROUP_SUFFIX = "_parallel";
/** Stage ids are kebab-case, so a group's state name cannot collide with a stage's. */
export const groupState = (stageId: string): string => `${stageId}${GROUP_SUFFIX}`;

/** The stage a state is named after: itself, or the stage a parallel group fans out from. */
export const stageOfState = (state: string): string =>
  state.endsWith(GROUP_SUFFIX) ? state.slice(0, -GROUP_SUFFIX.length) : state;

/**
 * `<run>/<stage>/<visit>`, nested under the parent stage's execution for a sub-pipeline. Joined
 * flat: every audit event of the stage execution keeps it.
 */
export const executionId = (context: PipelineContext, stageId: string): string =>
  [
    context.asStage?.stageExecutionId ?? context.runId,
    "/",
    stageId,
    "/",
    lookup(context.visits, stageId) ?? 1,
  ].join("");

/** The stage executions the run has entered, this pipeline's and its sub-pipelines' included. */
const enteredInRun = (context: PipelineContext): number =>
  (context.enteredBefore ?? 0) + (context.entered ?? 0);

/**
 * What a stage entered just now is told the run entered before it: its own entry (the `enter`
 * action, run before its child's input is taken) already counted.
 */
const stagesBefore = (context: PipelineContext): number => Math.max(0, enteredInRun(context) - 1);

/**
 * The stage executions a child that ended entered: a sub-pipeline's count, none for a stage (nor
 * for a child that crashed, which has no output).
 */
export const enteredBy = (output: StageResult | PipelineOutput | undefined): number =>
  output !== undefined && "status" in output && "result" in output ? (output.entered ?? 0) : 0;

export function actorOf(stage: PipelineStage): string {
  switch (stage.kind) {
    case "llm":
      return "stage";
    case "pipeline":
      return `pipeline:${stage.id}`;
    case "ask":
      return "ask";
    default:
      return "code";
  }
}

/** A map group's sibling: its id (`review-file[3]`) and the ctx its item gives it. */
export interface ItemSibling {
  id: string;
  ctx(context: PipelineContext): Readonly<Record<string, unknown>>;
}

/**
 * The child's input; parallel siblings get empty upstream. A sub-pipeline is handed its stage's
 * upstream (the result before it, or a join's results), which its entry stage receives. A map
 * group's sibling runs its stage as an execution of its own (`<run>/review-file[3]/1`), with its
 * item in ctx.
 */
export function childInput(
  pipeline: PipelineDefinition,
  stage: PipelineStage,
  mode: "sequential" | "sibling",
  item?: ItemSibling,
) {
  return ({ context: machineContext }: { context: PipelineContext }) => {
    const context = item ? { ...machineContext, ctx: item.ctx(machineContext) } : machineContext;
    const upstream = mode === "sibling" ? [] : context.upstream;
    const stageExecutionId = executionId(context, item?.id ?? stage.id);
    const override = overrideOf(context, stage.id);
    switch (stage.kind) {
      case "llm":
        return {
          stage: stage.definition,
          runId: context.runId,
          stageExecutionId,
          pipelineId: pipeline.id,
          ctx: context.ctx,
          upstream,
          stagesBefore: stagesBefore(context),
          modelCallsBefore: lookup(context.modelCalls, stage.id) ?? 0,
          ...(stage.outputFields !== undefined && { outputFields: stage.outputFields }),
          ...override,
        };
      case "pipeline":
        return {
          runId: context.runId,
          ctx: context.ctx,
          upstream,
          asStage: { stageId: stage.id, stageExecutionId },
          enteredBefore: enteredInRun(context),
          ...override,
        };
      case "ask":
        return {
          runId: context.runId,
          stageId: stage.id,
          stageExecutionId,
          prompt: stage.prompt,
          schema: stage.schema,
          ...(stage.timeout !== undefined && { timeout: stage.timeout }),
        };
      default:
        return {
          runId: context.runId,
          stageId: stage.id,
          stageExecutionId,
          ctx: context.ctx,
          upstream,
          stagesBefore: stagesBefore(context),
          ...override,
        };
    }
  };
}

/**
 * `{override}` for the stage execution the last override entered (the stage, at the visit it
 * made it), and nothing for any other: a later visit of the stage was not entered by it.
 */
function overrideOf(context: PipelineContext, stageId: string): { override?: OverrideNote } {
  const last = context.override;
  if (last?.stageId !== stageId || last.visit !== lookup(context.visits, stageId)) return {};
  return { override: { reason: last.reason, ...(last.from !== undefined && { from: last.from }) } };
}

/** A child's output as a StageResult: sub-pipelines hand back theirs under `result`. */
export function resultOf(output: StageResult | PipelineOutput): StageResult {
  return "status" in output && "result" in output ? output.result : (output as StageResult);
}

/**
 * A code or command stage's StageExited, audited by the transition that takes its result rather
 * than by the promise that produced it: emitted apart, a step could be committed between the two,
 * holding the exit with a snapshot where the stage still runs (a resume would run it again).
 */
export function exitActions(stage: PipelineStage) {
  if (stage.kind !== "code" && stage.kind !== "command") return [];
  return [
    {
      type: "codeExited",
      params: ({ event }: DoneArgs) => ({ result: resultOf(event.output) }),
    },
  ];
}

export function codeExitEvent(runId: string, result: StageResult): AuditEventInput {
  const { stageId, stageExecutionId, verdict, reason, capHit, attemptCount } = result;
  return {
    type: "StageExited",
    runId,
    stageId,
    stageExecutionId,
    attempt: attemptCount,
    payload: { verdict, ...(reason !== undefined && { reason }), capHit, attemptCount },
  };
}

export type DoneArgs = {
  context: PipelineContext;
  event: { output: StageResult | PipelineOutput };
};

/**
 * OVERRIDE and REDO, taken at the root, one transition per stage that has a state: the guards
 * ask the topology whether the stage running now (`context.current`) may go there, so the
 * machine grows with the stages rather than with the pairs of them. One that no guard allows is
 * refused: audited and emitted, not dropped.
 */
export function controlTransitions(targets: readonly string[]) {
  const from = ({ context }: { context: PipelineContext }) => currentStage(context);
  const refused = { actions: "refuseControl" };
  return {
    OVERRIDE: [
      ...targets.map((target) => ({
        guard: { type: "overrideTo", params: { target } },
        target: `.${target}`,
        actions: [
          { type: "cancelRunning", params: { reason: `overridden to ${target}` } },
          { type: "noteOverride", params: { target } },
          {
            type: "audit",
            params: (args: {
              context: PipelineContext;
              event: { to: string; reason: string };
            }) => ({
              type: "OverrideApplied",
              payload: { from: from(args), to: args.event.to, reason: args.event.reason },
            }),
          },
          {
            type: "audit",
            params: (args: { context: PipelineContext }) => ({
              type: "SMTransition",
              payload: { from: from(args), to: target, kind: "override" },
            }),
          },
        ],
      })),
      refused,
    ],
    REDO: [
      ...targets.map((target) => ({
        guard: { type: "redoOf", params: { target } },
        target: `.${target}`,
        actions: [
          { type: "cancelRunning", params: { reason: `redo of ${target}` } },
          { type: "restoreUpstream", params: { stageId: target } },
          {
            type: "audit",
            params: (args: { context: PipelineContext }) => ({
              type: "SMTransition",
              payload: { from: from(args), to: target, kind: "redo" },
            }),
          },
        ],
      })),
      refused,
    ],
  };
}

/** The stage the run is at: the stage running now, or the stage the running group fans out from. */
export const currentStage = (context: PipelineContext): string | undefined =>
  context.current === undefined ? undefined : stageOfState(context.current);

export function transitionAudit(from: string, to: Target, kind: "sequential" | "terminal") {
  return { type: "audit", params: { type: "SMTransition", payload: { from, to, kind } } };
}

export function fail<A>(error: (args: A) => ErrorView) {
  return {
    type: "finish",
    params: (args: A) => ({ status: "failed" as const, error: error(args) }),
  };
}

export const isStage = (target: Target): boolean => !ENDS.has(target);
export const stateOf = (target: Target): string =>
  target === DONE ? "done" : target === FAIL ? "failed" : target === CANCEL ? "cancelled" : target;
