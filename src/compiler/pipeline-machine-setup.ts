import { type AnyStateMachine, assign, enqueueActions, fromPromise, setup } from "xstate";
import type { StageResult } from "../definitions/contract.js";
import type {
  JoinPolicy,
  MapGroup,
  PipelineDefinition,
  Rule,
} from "../definitions/pipeline-types.js";
import type { ErrorView } from "../errors.js";
import type { AuditEventType } from "../events/audit.js";
import { ruleHolds } from "./conditions.js";
import type {
  CodeStageInput,
  ControlRefused,
  PipelineContext,
  PipelineEvent,
  PipelineInput,
  PipelineOutput,
  PipelineServices,
  RunStatus,
} from "./pipeline-context.js";
import { mapList } from "./pipeline-map.js";
import {
  decideGroup,
  type GroupParams,
  runningStages,
  stageOfSibling,
  startedGroup,
  tallyOf,
} from "./pipeline-parallel.js";
import { codeExitEvent, currentStage, executionId, groupState } from "./pipeline-states.js";
import { viewOf } from "./stage-entries.js";
import { withSlot } from "./stage-slots.js";
import { lookup, withEntry } from "./stage-table.js";
import { mayOverride, mayRedo } from "./topology.js";

/**
 * The pipeline machine's vocabulary, its states being compiled from the topology in
 * pipeline-machine.ts: the actors, guards and actions for one run's services, everything a run
 * does beyond routing, so the compiled states are a pure function of the definition.
 * `subMachines`: the machine of each sub-pipeline stage, by `pipeline:<stage id>`.
 */
export function pipelineSetup(
  pipeline: PipelineDefinition,
  services: PipelineServices,
  subMachines: Record<`pipeline:${string}`, AnyStateMachine>,
) {
  return setup({
    types: {} as {
      context: PipelineContext;
      events: PipelineEvent;
      input: PipelineInput;
      output: PipelineOutput;
      emitted: ControlRefused;
    },
    actors: {
      stage: services.stageMachine,
      ask: services.askMachine,
      code: fromPromise<StageResult, CodeStageInput>(({ input, signal, self }) => {
        const stage = pipeline.stages[input.stageId];
        if (stage?.kind !== "code" && stage?.kind !== "command")
          throw new Error(`${input.stageId} is not a code stage`);
        return withSlot(services.slots, input.stageExecutionId, self, () =>
          services.runCode(stage, input, signal),
        );
      }),
      ...subMachines,
    },
    guards: {
      ruleHolds: ({ context }, params: { rule: Rule; result: StageResult }) =>
        ruleHolds(params.rule, params.result, context, pipeline.guards),
      succeeded: (_, params: { result: StageResult }) =>
        params.result.verdict === "ok" || params.result.verdict === "skip",
      /** A map group's fan-out succeeded, but its list cannot be run over. */
      mapRefuses: ({ context }, params: { result: StageResult; from: string; group: MapGroup }) =>
        (params.result.verdict === "ok" || params.result.verdict === "skip") &&
        "error" in mapList(params.from, params.group, params.result, context.ctx),
      groupDecides: (
        { context },
        params: { group: string; policy: JoinPolicy; decision: "join" | "fail" },
      ) => decideGroup(params.policy, tallyOf(context, params.group)) === params.decision,
      overrideTo: ({ context, event }, params: { target: string }) =>
        event.type === "OVERRIDE" &&
        event.to === params.target &&
        mayOverride(pipeline, currentStage(context) ?? "", params.target),
      redoOf: ({ context, event }, params: { target: string }) =>
        event.type === "REDO" &&
        event.stage === params.target &&
        (lookup(context.visits, params.target) ?? 0) > 0 &&
        mayRedo(pipeline, currentStage(context) ?? "", params.target),
    },
    actions: {
      audit: (
        { context },
        params: { type: AuditEventType; payload: Record<string, unknown>; stageId?: string },
      ) =>
        services.audit({
          type: params.type,
          runId: context.runId,
          ...(params.stageId !== undefined && { stageId: params.stageId }),
          payload: { pipelineId: context.pipelineId, ...params.payload },
        }),
      codeExited: ({ context }, params: { result: StageResult }) =>
        services.audit(codeExitEvent(context.runId, params.result)),
      enter: assign(({ context }, params: { stageId: string; sibling?: boolean }) => ({
        visits: withEntry(
          context.visits,
          params.stageId,
          (lookup(context.visits, params.stageId) ?? 0) + 1,
        ),
        // A sub-pipeline's stages count as they are entered, in it (`enteredBy` on its end).
        ...(pipeline.stages[stageOfSibling(params.stageId)]?.kind !== "pipeline" && {
          entered: (context.entered ?? 0) + 1,
        }),
        ...(!params.sibling && { current: params.stageId }),
        upstreamOf: withEntry(
          context.upstreamOf,
          params.stageId,
          params.sibling ? [] : context.upstream,
        ),
      })),
      record: assign(({ context }, params: { result: StageResult; entered: number }) => ({
        ...recorded(context, params.result),
        entered: (context.entered ?? 0) + params.entered,
      })),
      leaveStage: assign({ current: undefined }),
      /** Kept for the stage execution the override enters: the target's next visit. */
      noteOverride: assign(({ context, event }, params: { target: string }) => {
        if (event.type !== "OVERRIDE") return {};
        const from = currentStage(context);
        return {
          override: {
            reason: event.reason,
            ...(from !== undefined && { from }),
            stageId: params.target,
            visit: (lookup(context.visits, params.target) ?? 0) + 1,
          },
        };
      }),
      handOn: assign((_, params: { upstream: StageResult[] }) => ({ upstream: params.upstream })),
      restoreUpstream: assign(({ context }, params: { stageId: string }) => ({
        upstream: lookup(context.upstreamOf, params.stageId) ?? [],
      })),
      startGroup: assign(({ context }, params: GroupParams & { ids: readonly string[] }) => ({
        current: groupState(params.group),
        ...startedGroup(context, params, params.ids),
      })),
      cancelRunning: ({ context }, params: { reason: string }) => {
        for (const stageId of runningStages(context, pipeline)) {
          services.audit({
            type: "StageCancelled",
            runId: context.runId,
            stageId,
            stageExecutionId: executionId(context, stageId),
            payload: { reason: params.reason },
          });
        }
      },
      finish: assign((_, params: { status: RunStatus; error?: ErrorView }) => ({
        status: params.status,
        ...(params.error && { error: params.error }),
      })),
      runBegins: ({ context }) => {
        if (!context.asStage) services.run?.begins(context);
      },
      runEnds: ({ context }) => {
        if (!context.asStage) services.run?.ends(context);
      },
      refuseControl: enqueueActions(({ context, event, enqueue }) => {
        const error =
          services.refusal?.(context, event) ??
          viewOf("Session/IllegalTransition", `the run cannot take ${event.type} now`);
        services.audit({
          type: "RequestRefused",
          runId: context.runId,
          payload: { pipelineId: context.pipelineId, control: event, error },
        });
        enqueue.emit({ type: "stagechart.controlRefused", control: event, error });
      }),
    },
  });
}

function recorded(
  context: PipelineContext,
  result: StageResult,
): Pick<PipelineContext, "results" | "lastEnded" | "modelCalls"> {
  const calls = (lookup(context.modelCalls, result.stageId) ?? 0) + (result.modelCalls ?? 0);
  return {
    results: withEntry(context.results, result.stageId, result),
    // Its output is the run's (`pipelineOutput`), even when it ran before too.
    lastEnded: result.stageId,
    modelCalls: withEntry(context.modelCalls, result.stageId, calls),
  };
}
