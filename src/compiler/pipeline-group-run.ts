import { type EventObject, enqueueActions, type MachineContext, spawnChild } from "xstate";
import type { StageResult } from "../definitions/contract.js";
import type {
  PipelineDefinition,
  PipelineStage,
  Transition,
} from "../definitions/pipeline-types.js";
import type { PipelineContext, PipelineOutput } from "./pipeline-context.js";
import { enteredItems, itemCtx } from "./pipeline-map.js";
import {
  crashedResult,
  type GroupParams,
  type GroupSiblings,
  groupDecisions,
  itemIndexOf,
  itemSibling,
  runningStages,
  settledSibling,
  siblingState,
  stageOfSibling,
  tallyOf,
} from "./pipeline-parallel.js";
import {
  actorOf,
  childInput,
  enteredBy,
  type ItemSibling,
  resultOf,
  stageOfState,
} from "./pipeline-states.js";

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
 * is, so stored snapshots, the chart and the runtime find it the same way. A map group is the
 * same state whose siblings are decided as it is entered: one per item of its list, each an
 * execution of its one stage (`review-file[3]`), counted rather than listed.
 */
export function spawnedGroupState(
  pipeline: PipelineDefinition,
  from: string,
  transition: Extract<Transition, { kind: "parallel" | "map" }>,
) {
  const siblings: GroupSiblings =
    transition.kind === "map"
      ? { kind: "map", stage: transition.stage }
      : { kind: "static", ids: transition.siblings };
  const map = transition.kind === "map" ? transition : undefined;
  const group: GroupParams = {
    group: from,
    siblings,
    maxConcurrency:
      transition.maxConcurrency ??
      (transition.kind === "map" ? Number.POSITIVE_INFINITY : transition.siblings.length),
  };

  /** The sibling's child: a map group's item runs its stage with the item in ctx. */
  const child = (sibling: string) => {
    const stage = pipeline.stages[stageOfSibling(sibling)] as PipelineStage;
    const index = itemIndexOf(sibling);
    const item: ItemSibling | undefined =
      map && index !== undefined
        ? { id: sibling, ctx: (context) => itemCtx(context, from, map, index) }
        : undefined;
    return spawnChild(actorOf(stage), {
      id: sibling,
      // Typed over any machine context, as the actions it is enqueued with are.
      input: ({ context }: { context: MachineContext }) =>
        childInput(pipeline, stage, "sibling", item)({ context: context as PipelineContext }),
    });
  };

  /** What enters and spawns siblings moved from queued to running, in their order. */
  const start = (started: readonly string[]) =>
    started.flatMap((sibling) => [
      { type: "enter", params: { stageId: sibling, sibling: true } },
      child(sibling),
    ]);

  /** A running sibling ended: stopped, a code stage's exit audited, settled, the next started. */
  const settle = (result: (context: PipelineContext, event: ChildEvent) => StageResult) =>
    enqueueActions(({ context: machineContext, event, enqueue }) => {
      const context = machineContext as PipelineContext;
      const ended = event as ChildEvent;
      const sibling = ended.actorId;
      if (siblingState(context, from, sibling) !== "running") return;
      const settled = result(context, ended);
      const kind = pipeline.stages[stageOfSibling(sibling)]?.kind;
      enqueue.stopChild(sibling);
      if (kind === "code" || kind === "command")
        enqueue({ type: "codeExited", params: { result: settled } });
      const before = tallyOf(context, from);
      const after = {
        ...settledSibling(context, group, sibling, settled),
        entered: (context.entered ?? 0) + enteredBy(ended.output),
      };
      enqueue.assign(after);
      const now = tallyOf({ ...context, ...after }, from).started;
      for (let index = before.started; index < now; index++) {
        for (const action of start([siblingAfter(siblings, index)])) enqueue(action);
      }
    });

  return {
    entry: enqueueActions(({ context, enqueue }) => {
      const ids = map
        ? enteredItems(context as PipelineContext, from, map).map((_, index) =>
            itemSibling(map.stage, index),
          )
        : (siblings as { ids: readonly string[] }).ids;
      enqueue({ type: "startGroup", params: { ...group, ids } });
      for (const action of start(ids.slice(0, group.maxConcurrency))) enqueue(action);
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
    always: groupDecisions(from, siblings, transition.join, transition.policy),
  };
}

/** The sibling at `index` of a group that has one there. */
const siblingAfter = (siblings: GroupSiblings, index: number): string =>
  siblings.kind === "map" ? itemSibling(siblings.stage, index) : (siblings.ids[index] as string);

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
