import {
  type AnyActorRef,
  type AnyStateMachine,
  createMachine,
  type MetaObject,
  type ParameterizedObject,
  type ProvidedActor,
  type StateMachine,
  type StateSchema,
  type StateValue,
  type setup,
} from "xstate";
import type { JsonValue } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { UNBOUND_ASK_MACHINE } from "./ask-stage.js";
import { fingerprint } from "./definition-hash.js";
import { MachineCache, withImplementations } from "./machine-cache.js";
import type {
  ControlRefused,
  PipelineContext,
  PipelineEvent,
  PipelineInput,
  PipelineOutput,
  PipelineServices,
} from "./pipeline-context.js";
import { spawnedGroupState } from "./pipeline-group-run.js";
import { pipelineSetup } from "./pipeline-machine-setup.js";
import { stageState } from "./pipeline-sequence.js";
import { controlTransitions, groupState } from "./pipeline-states.js";
import { viewOf } from "./stage-entries.js";
import { EMPTY_TABLE, lookup, recordOf } from "./stage-table.js";
import { onlyASibling } from "./topology.js";

/**
 * A compiled pipeline, typed by what the outside sees of it: its input, the control events it
 * takes and its output. Its states are generated from the pipeline's topology, so they are not.
 */
export type PipelineMachine = StateMachine<
  PipelineContext,
  PipelineEvent,
  Record<string, AnyActorRef | undefined>,
  ProvidedActor,
  ParameterizedObject,
  ParameterizedObject,
  string,
  StateValue,
  string,
  PipelineInput,
  PipelineOutput,
  ControlRefused,
  MetaObject,
  StateSchema
>;

/**
 * Compiles a pipeline into one XState machine: every stage state invokes the
 * lifecycle machine, a code-stage actor or a sub-pipeline machine as a child; a parallel group
 * runs its siblings side by side, left for the join once the policy is met.
 */
export function createPipelineMachine(
  pipeline: PipelineDefinition,
  services: PipelineServices,
): PipelineMachine {
  // An empty machine of the pipeline's setup carries its implementations for these services.
  const { implementations } = pipelineSetup(
    pipeline,
    services,
    subMachines(pipeline, services),
  ).createMachine({
    context: {} as PipelineContext,
  });
  return withImplementations(compiledPipeline(pipeline), implementations);
}

/**
 * The compiled machine every run of the pipeline is provided from (`createPipelineMachine`): its
 * states and transitions are those of every run, so what is drawn, walked and tested from it
 * (`graph`, the visualizer's chart, `paths`, `test`) is what runs. Its stages never run by
 * themselves.
 */
export function compiledPipeline(pipeline: PipelineDefinition): PipelineMachine {
  return compiledPipelines.get(compiledKey(pipeline), () => compilePipelineMachine(pipeline));
}

/** Pipeline machines compiled in this process, by definition hash. */
const compiledPipelines = new MachineCache<PipelineMachine>(64);

/**
 * What the compiled states are made of: the definition's hash, and what the states take from the
 * definition that its hash leaves out (its id, its override reach, its stages' order and files).
 */
const compiledKey = (pipeline: PipelineDefinition): string =>
  JSON.stringify([
    fingerprint(pipeline).hash,
    pipeline.id,
    pipeline.override ?? null,
    Object.values(pipeline.stages).map((stage) => [
      stage.id,
      stage.kind === "llm" ? stage.definition.file : null,
    ]),
  ]);

/** How many pipeline machines this process compiled (a run of a cached definition compiles none). */
export const pipelineCompiles = (): number => compiledPipelines.compiles;

/** What a compiled machine runs with until a run provides its own services: nothing. */
const NOT_BOUND: PipelineServices = {
  stageMachine: createMachine({ id: "stage" }),
  askMachine: UNBOUND_ASK_MACHINE,
  runCode: () => Promise.reject(new Error("a compiled pipeline does not run stages by itself")),
  audit: () => undefined,
};

/** The machine of each sub-pipeline stage, bound to the same services. */
function subMachines(
  pipeline: PipelineDefinition,
  services: PipelineServices,
): Record<`pipeline:${string}`, AnyStateMachine> {
  return Object.fromEntries(
    Object.values(pipeline.stages).flatMap((stage) =>
      stage.kind === "pipeline"
        ? [[`pipeline:${stage.id}`, createPipelineMachine(stage.pipeline, services)]]
        : [],
    ),
  );
}

/**
 * The pipeline's states, compiled from its topology, not cached (`compiledPipeline` is); its
 * stages never run by themselves (see `createPipelineMachine` for a machine a run drives).
 */
export function compilePipelineMachine(pipeline: PipelineDefinition): PipelineMachine {
  const machineSetup = pipelineSetup(pipeline, NOT_BOUND, subMachines(pipeline, NOT_BOUND));

  const ownStates = Object.values(pipeline.stages).filter(
    (stage) => !onlyASibling(pipeline, stage.id),
  );
  const stageStates = Object.fromEntries(
    ownStates.map((stage) => [stage.id, stageState(pipeline, stage)]),
  );
  const groupStates = Object.fromEntries(
    Object.entries(pipeline.next).flatMap(([from, transition]) =>
      transition.kind === "rules"
        ? []
        : [[groupState(from), spawnedGroupState(pipeline, from, transition)]],
    ),
  );

  return machineSetup.createMachine({
    id: pipeline.id,
    context: ({ input }) => ({
      pipelineId: pipeline.id,
      runId: input.runId,
      ...(input.asStage && { asStage: input.asStage }),
      ...(input.enteredBefore !== undefined && { enteredBefore: input.enteredBefore }),
      ctx: input.ctx,
      visits: EMPTY_TABLE,
      entered: 0,
      modelCalls: EMPTY_TABLE,
      results: EMPTY_TABLE,
      upstream: [...(input.upstream ?? [])],
      upstreamOf: EMPTY_TABLE,
      groups: {},
      tallies: {},
      ...(input.override && {
        override: { ...input.override, stageId: pipeline.entry, visit: 1 },
      }),
      ...input.carried,
    }),
    initial: pipeline.entry,
    entry: "runBegins",
    on: {
      CANCEL: ".cancelled",
      // OVERRIDE and REDO are taken at the root, where their guards allow (generated from the
      // topology like the states, so typed by the setup only); one no guard allows is refused.
      ...(controlTransitions(ownStates.map((stage) => stage.id)) as Record<never, never>),
    },
    output: ({ context }) => pipelineOutput(pipeline, context),
    // The states are generated from the pipeline's topology, so they are typed by the setup only.
    states: {
      ...stageStates,
      ...groupStates,
      done: { type: "final", entry: [{ type: "finish", params: { status: "done" } }, "runEnds"] },
      failed: {
        type: "final",
        entry: [{ type: "finish", params: { status: "failed" } }, "runEnds"],
      },
      cancelled: {
        type: "final",
        entry: [
          { type: "cancelRunning", params: { reason: "the run was cancelled" } },
          {
            type: "finish",
            params: {
              status: "cancelled",
              error: viewOf("Cancellation/RunCancelled", "the run was cancelled"),
            },
          },
          "runEnds",
        ],
      },
    } as unknown as GeneratedStates,
  });
}

type GeneratedStates = Parameters<ReturnType<typeof setup>["createMachine"]>[0]["states"];

function pipelineOutput(pipeline: PipelineDefinition, context: PipelineContext): PipelineOutput {
  const status = context.status ?? "failed";
  const last =
    context.lastEnded === undefined ? undefined : lookup(context.results, context.lastEnded);
  const output: JsonValue | undefined = last?.output;
  const { stageId, stageExecutionId } = context.asStage ?? {
    stageId: pipeline.id,
    stageExecutionId: context.runId,
  };
  return {
    status,
    results: recordOf(context.results),
    ...(context.asStage && { entered: context.entered ?? 0 }),
    ...(context.error && { error: context.error }),
    result: {
      stageId,
      stageExecutionId,
      verdict: status === "done" ? "ok" : "fail",
      ...(output !== undefined && { output }),
      capHit: false,
      attemptCount: 1,
      ...(context.error && { error: context.error, reason: context.error.message }),
    },
  };
}
