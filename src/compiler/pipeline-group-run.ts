import { type EventObject, enqueueActions, spawnChild } from "xstate";
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
  tallyOf,
} from "./pipeline-parallel.js";
import { actorOf, childInput, enteredBy, resultOf, stageOfState } from "./pipeline-states.js";

/** A child's done or error event: its id names the sibling. */
type ChildEvent = EventObject & { actorId: string; output?: StageResult | PipelineOutput };

/**
 * A parallel group as it runs: one state that spawns its siblings as child actors (at most
 * `maxConcurrency` at once, in declaration order) and settles them as they end, so a sibling
 * costs the same in a group of 1,000 as in a group of 10. (XState offers every event to every
 * region of a parallel state and rebuilds the value of all of them at each step, so the drawn
 * shape, `parallelState`, one region per sibling, costs O(n) per sibling.) Each sibling's
 * queued/running/settled state is kept in `context.groups`, as in the drawn shape.
 *
 * Its actions, audit and decisions, and their order, are those of `parallelState`: a spawned
 * sibling's id is its stage id, as an invoked one's is, so stored snapshots, the chart and the
 * runtime find it the same way.
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
        spawnChild(actorOf(stage), { id: sibling, input: childInput(pipeline, stage, "sibling") }),
      ];
    });

  /** A running sibling ended: stopped, a code stage's exit audited, settled, the next started. */
  const settle = (result: (context: PipelineContext, event: ChildEvent) => StageResult) =>
    enqueueActions(({ context: machineContext, event, enqueue }) => {
      const context = machineContext as PipelineContext;
      const child = event as ChildEvent;
      const sibling = child.actorId;
      if (context.groups[from]?.[sibling] !== "running") return;
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
      for (const sibling of runningStages(context as PipelineContext)) enqueue.stopChild(sibling);
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

/** One edge of the drawn graph, as `graph --format json` names it. */
export interface DrawnEdge {
  source: string;
  target: string;
  eventType: string;
  description: string;
}

/**
 * The edges of the drawn shape (`parallelState`'s regions) that a step of the run shape stands
 * for, so what a run took reads on the drawn graph: every sibling started so far went queued →
 * running, and the sibling whose event the step took went running → settled (or crashed).
 */
export function drawnSiblingEdges(step: {
  snapshot: unknown;
  event: EventObject;
  _transitions: readonly { source: { id: string }; eventType: string }[];
}): DrawnEdge[] {
  const { machine, value, context } = step.snapshot as {
    machine?: { id: string };
    value?: unknown;
    context?: PipelineContext;
  };
  const current = context?.current;
  if (!machine || !current || value !== current || stageOfState(current) === current) return [];
  const group = `${machine.id}.${current}`;
  const edge = (
    sibling: string,
    from: string,
    to: string,
    eventType: string,
    description: string,
  ) => ({
    source: `${group}.${sibling}.${from}`,
    target: `${group}.${sibling}.${to}`,
    eventType,
    description,
  });
  const started = Object.entries(context.groups[stageOfState(current)] ?? {}).flatMap(
    ([sibling, state]) =>
      state === "queued" ? [] : [edge(sibling, "queued", "running", "", "started")],
  );
  const settled = step._transitions.flatMap((transition) => {
    const sibling = (step.event as Partial<ChildEvent>).actorId;
    if (transition.source.id !== group || sibling === undefined) return [];
    if (transition.eventType === "xstate.done.actor.*")
      return [edge(sibling, "running", "settled", `xstate.done.actor.${sibling}`, "settled")];
    if (transition.eventType === "xstate.error.actor.*")
      return [edge(sibling, "running", "settled", `xstate.error.actor.${sibling}`, "crashed")];
    return [];
  });
  return [...started, ...settled];
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A pipeline snapshot stored while groups still ran as regions, in the run shape (same hash):
 * a group's value, a region per sibling, becomes its one state (the siblings' states are in
 * `context.groups` either way), in sub-pipelines too. Any other snapshot is returned as it is.
 */
export function groupsAsRun(snapshot: unknown): unknown {
  if (!isRecord(snapshot)) return snapshot;
  const [state, regions] = isRecord(snapshot.value)
    ? (Object.entries(snapshot.value)[0] ?? [])
    : [];
  const value =
    state !== undefined && stageOfState(state) !== state && isRecord(regions)
      ? state
      : snapshot.value;
  const children = isRecord(snapshot.children)
    ? Object.fromEntries(
        Object.entries(snapshot.children).map(([id, child]) => [
          id,
          isRecord(child) && String(child.src).startsWith("pipeline:")
            ? { ...child, snapshot: groupsAsRun(child.snapshot) }
            : child,
        ]),
      )
    : snapshot.children;
  return { ...snapshot, value, children };
}
