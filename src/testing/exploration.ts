import {
  type AnyActorScope,
  type AnyStateMachine,
  createActor,
  type EventObject,
  fromTransition,
  type InspectionEvent,
} from "xstate";
import { StagechartError } from "../errors.js";
import { edgeKey } from "./edge-key.js";
import { isEnd } from "./model.js";
import type { ModelSnapshot, PathEvent, Traversal } from "./traversal.js";

/** One step of the walk: from a state, by an event, to a state, taking these graph transitions. */
export interface ExploredEdge {
  from: number;
  event: PathEvent;
  to: number;
  /** The transitions the step takes, as coverage keys (`edgeKey`), eventless ones after it included. */
  transitions: string[];
}

export interface ExploredState {
  snapshot: ModelSnapshot;
  /** Steps from the initial state on a shortest way here. */
  depth: number;
  /** The edge a shortest way here arrives by (none for the initial state). */
  via?: ExploredEdge;
  /** The edge a shortest way from here to an end leaves by; none at an end, or where no end is reachable. */
  toEnd?: ExploredEdge;
  /** Steps from here to the nearest end (Infinity when none is reachable). */
  endDistance: number;
}

/** Every state the traversal reaches from the initial one (in breadth-first order) and every step between them. */
export interface Exploration {
  states: ExploredState[];
  edges: ExploredEdge[];
}

/** Walks no more states than this: a pipeline whose model has more is refused, as xstate/graph refuses it. */
const STATE_LIMIT = 100_000;

/**
 * Walks a pipeline's model breadth first, as `xstate/graph` does (each step is the machine's own
 * `transition`, see `stepperOf`), recording the transitions each step takes, so that a path can be built for any
 * transition: the shortest way to a state it leaves, the step that takes it, and the shortest
 * way on to an end.
 */
export function explore(machine: AnyStateMachine, traversal: Traversal): Exploration {
  const stepper = stepperOf(machine);
  const initial = stepper.initial(traversal.input);
  const states: ExploredState[] = [{ snapshot: initial, depth: 0, endDistance: Infinity }];
  const index = new Map([[traversal.serializeState(initial), 0]]);
  const edges: ExploredEdge[] = [];
  for (let from = 0; from < states.length; from++) {
    const state = states[from] as ExploredState;
    for (const event of traversal.events(state.snapshot)) {
      const { next, transitions } = stepper.step(state.snapshot, event);
      const key = traversal.serializeState(next);
      let to = index.get(key);
      if (to === undefined) {
        if (states.length >= STATE_LIMIT)
          throw new StagechartError(
            "Validation/PathLimitExceeded",
            `the pipeline's model has more than ${STATE_LIMIT} states within the visits allowed: lower --max-visits`,
            { limit: STATE_LIMIT },
          );
        to = states.length;
        index.set(key, to);
        states.push({ snapshot: next, depth: state.depth + 1, endDistance: Infinity });
      }
      const edge = { from, event, to, transitions };
      edges.push(edge);
      (states[to] as ExploredState).via ??= edge;
    }
  }
  measureEndDistances(states, edges);
  return { states, edges };
}

/** Each state's distance to the nearest end, and the edge that leads there: a breadth-first walk back from the ends. */
function measureEndDistances(states: ExploredState[], edges: readonly ExploredEdge[]): void {
  const into = new Map<number, ExploredEdge[]>();
  for (const edge of edges) into.set(edge.to, [...(into.get(edge.to) ?? []), edge]);
  const queue: number[] = [];
  states.forEach((state, at) => {
    if (isEnd(state.snapshot.value)) {
      state.endDistance = 0;
      queue.push(at);
    }
  });
  for (let i = 0; i < queue.length; i++) {
    const at = queue[i] as number;
    const distance = (states[at] as ExploredState).endDistance + 1;
    for (const edge of into.get(at) ?? []) {
      const source = states[edge.from] as ExploredState;
      if (source.endDistance <= distance) continue;
      source.endDistance = distance;
      source.toEnd = edge;
      queue.push(edge.from);
    }
  }
}

/** The shortest way from the initial state through `edge` and on to the nearest end, edge by edge. */
export function wayThrough(exploration: Exploration, edge: ExploredEdge): ExploredEdge[] {
  const before: ExploredEdge[] = [];
  for (let via = exploration.states[edge.from]?.via; via; via = exploration.states[via.from]?.via)
    before.unshift(via);
  const after: ExploredEdge[] = [];
  for (let on = exploration.states[edge.to]?.toEnd; on; on = exploration.states[on.to]?.toEnd)
    after.push(on);
  return [...before, edge, ...after];
}

/** Steps a model one event at a time, saying which transitions each step took. */
export interface Stepper {
  initial(input: Traversal["input"]): ModelSnapshot;
  step(snapshot: ModelSnapshot, event: EventObject): { next: ModelSnapshot; transitions: string[] };
}

/**
 * The machine's own `transition`, in an actor scope like the one `xstate/graph` walks with
 * (nothing is executed, no child started) whose system reports each microstep's transitions, as
 * coverage keys (`edgeKey`; a transition without a target drawn back to its source).
 */
export function stepperOf(machine: AnyStateMachine): Stepper {
  const taken: string[] = [];
  const holder = createActor(
    fromTransition((state: undefined) => state, undefined),
    {
      inspect: (event: InspectionEvent) => {
        if (event.type !== "@xstate.microstep") return;
        for (const transition of event._transitions)
          for (const target of transition.target ?? [transition.source])
            taken.push(
              edgeKey(
                transition.source.id,
                target.id,
                transition.eventType,
                transition.description,
              ),
            );
      },
    },
  );
  const scope = {
    self: holder,
    logger: () => undefined,
    id: "",
    sessionId: holder.sessionId,
    defer: () => undefined,
    system: holder.system,
    stopChild: () => undefined,
    emit: () => undefined,
    actionExecutor: () => undefined,
  } as unknown as AnyActorScope;
  return {
    initial: (input) => machine.getInitialSnapshot(scope, input) as ModelSnapshot,
    step: (snapshot, event) => {
      taken.length = 0;
      const next = machine.transition(snapshot as never, event, scope) as ModelSnapshot;
      return { next, transitions: [...new Set(taken)] };
    },
  };
}
