import { type EventObject, enqueueActions, type MachineContext, spawnChild } from "xstate";
import type { StageResult } from "../definitions/contract.js";
import type {
  JoinPolicy,
  PipelineDefinition,
  PipelineStage,
  Target,
} from "../definitions/pipeline-types.js";
import type { PipelineContext, PipelineOutput } from "./pipeline-context.js";
import {
  crashedResult,
  type GroupParams,
  groupDecisions,
  runningStages,
  settledSibling,
  siblingState,
  tallyOf,
} from "./pipeline-parallel.js";
import { actorOf, childInput, enteredBy, resultOf, stageOfState } from "./pipeline-states.js";

/** A child's done or error event: its id names the sibling. */
type ChildEvent = EventObject & { actorId: string; output?: StageResult | PipelineOutput };

/**
 * A parallel group: one state that spawns its siblings as child actors (at most
 * `maxConcurrency` at once, in declaration order) and settles them as they end, so a sibling
 * costs the same in a group of 1,000 as in a group of 10. Each sibling's queued/running/settled
 * state is kept in `context.groups`, not in regions: XState offers every event to every region
 * of a parallel state and rebuilds the value of all of them at each step (O(n) per sibling), and
 * it matches each event against every event descriptor of the state (looking for wildcards), so
 * the siblings' ends are one wildcard transition each (`settled`, `crashed`) rather than one per
 * sibling. A spawned sibling's id is its stage id, as a stage state's invoked child's
 * is, so stored snapshots, the chart and the runtime find it the same way.
 */
export function spawnedGroupState(
  pipeline: PipelineDefinition,
  from: string,
  siblings: string[],
  join: Target,
  policy: JoinPolicy,
  maxConcurrency: number,
) {
  const group: GroupParams = { group: from, siblings, maxConcurrency };

  /** What enters and spawns siblings moved from queued to running, in declaration order. */
  const start = (started: readonly string[]) =>
    started.flatMap((sibling) => {
      const stage = pipeline.stages[sibling] as PipelineStage;
      return [
        { type: "enter", params: { stageId: sibling, sibling: true } },
        spawnChild(actorOf(stage), {
          id: sibling,
          // Typed over any machine context, as the actions it is enqueued with are.
          input: ({ context }: { context: MachineContext }) =>
            childInput(pipeline, stage, "sibling")({ context: context as PipelineContext }),
        }),
      ];
    });

  /** A running sibling ended: stopped, a code stage's exit audited, settled, the next started. */
  const settle = (result: (context: PipelineContext, event: ChildEvent) => StageResult) =>
    enqueueActions(({ context: machineContext, event, enqueue }) => {
      const context = machineContext as PipelineContext;
      const child = event as ChildEvent;
      const sibling = child.actorId;
      if (siblingState(context, from, sibling) !== "running") return;
      const settled = result(context, child);
      const kind = pipeline.stages[sibling]?.kind;
      enqueue.stopChild(sibling);
      if (kind === "code" || kind === "command")
        enqueue({ type: "codeExited", params: { result: settled } });
      const before = tallyOf(context, from).started;
      const after = {
        ...settledSibling(context, group, settled),
        entered: (context.entered ?? 0) + enteredBy(child.output),
      };
      enqueue.assign(after);
      for (const action of start(
        siblings.slice(before, tallyOf({ ...context, ...after }, from).started),
      ))
        enqueue(action);
    });

  return {
    entry: enqueueActions(({ enqueue }) => {
      enqueue({ type: "startGroup", params: group });
      for (const action of start(siblings.slice(0, maxConcurrency))) enqueue(action);
    }),
    exit: enqueueActions(({ context, enqueue }) => {
      for (const sibling of runningStages(context as PipelineContext, pipeline))
        enqueue.stopChild(sibling);
    }),
    on: {
      "xstate.done.actor.*": {
        description: "settled",
        actions: settle((_, event) => resultOf(event.output as StageResult | PipelineOutput)),
      },
      "xstate.error.actor.*": {
        description: "crashed",
        actions: settle((context, event) => crashedResult(context, event.actorId)),
      },
    },
    always: groupDecisions(from, siblings, join, policy),
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A pipeline snapshot stored while groups still ran as regions, in today's shape (same hash):
 * a group's value, a region per sibling, becomes its one state (the siblings' states are in
 * `context.groups` either way). Its sub-pipelines' are the caller's to walk; any other snapshot
 * is returned as it is.
 */
export function groupAsRun(snapshot: Record<string, unknown>): Record<string, unknown> {
  const [state, regions] = isRecord(snapshot.value)
    ? (Object.entries(snapshot.value)[0] ?? [])
    : [];
  return state !== undefined && stageOfState(state) !== state && isRecord(regions)
    ? { ...snapshot, value: state }
    : snapshot;
}
