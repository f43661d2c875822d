import type { AnyStateMachine } from "xstate";
import { stageOfState } from "../compiler/pipeline-states.js";
import type { Condition, PipelineDefinition } from "../definitions/pipeline-types.js";
import { isStagechartError } from "../errors.js";
import { boundariesMet, boundaryGoals, boundaryReach, tallyGoals } from "./boundaries.js";
import { graphTransitions, isControlTransition } from "./coverable.js";
import { stageDone } from "./events.js";
import {
  type Exploration,
  type ExploredEdge,
  explore,
  stepperOf,
  wayThrough,
} from "./exploration.js";
import { listGoal, mapGroupAfter } from "./map-lists.js";
import { activeStages, modelMachine, type PathEnd } from "./model.js";
import { ruledOutResults } from "./ruled-out.js";
import { type TraversalOptions, traversalOf } from "./traversal.js";

/** A transition no path takes, and the checked reason why. */
export interface Untaken {
  transition: string;
  reason: string;
}

/** Paths that together take every transition any run can take, and why each other one is not taken. */
export interface TransitionCover {
  paths: { steps: { stage: string; outcome: string }[]; end: PathEnd }[];
  untaken: Untaken[];
  /** The walk the paths were found on, for a way to a state the paths do not end at. */
  exploration: Exploration;
}

/**
 * For each transition of the graph, the shortest way to a state it leaves, the outcome that
 * takes it, and the shortest way on to an end; then as few of those ways as take them all,
 * chosen greedily (the way taking the most transitions not yet taken first, the shorter on a
 * tie). A transition no way takes is reported with a reason checked on the model: only an
 * outcome the stage's schema rules out takes it, or a path takes it under a higher
 * `--max-visits` (named), or none does within the bounds tried.
 */
export function transitionPaths(
  pipeline: PipelineDefinition,
  options: TraversalOptions & {
    /** Cover each `visits` threshold's boundaries too, walking as far as they need. */
    boundaries?: boolean;
  },
): TransitionCover {
  const bounds = options.boundaries ? boundaryBounds(pipeline, options) : options;
  const { machine, exploration } = walkOf(pipeline, bounds);
  const goals = options.boundaries
    ? boundaryGoals(pipeline, traversalOf(pipeline, options).outcomes, options.ctx)
    : [];
  const counted = graphTransitions(pipeline);
  const met = boundariesMet(goals, exploration);
  const listed = (edge: ExploredEdge) => {
    const goal = listGoal(pipeline, edge.event);
    return goal === undefined ? [] : [goal];
  };
  const labelsOf = (edge: ExploredEdge) => [...edge.transitions, ...met(edge), ...listed(edge)];
  // The control events asked for are sent too: each transition they take gets a path, though
  // coverage does not count them.
  const controls = exploration.edges.flatMap((edge) =>
    edge.transitions.filter(isControlTransition),
  );
  const tallies = options.boundaries ? tallyGoals(pipeline) : [];
  // Each list length a map fan-out is driven to produce gets a path too (see `listGoal`).
  const lists = new Set(exploration.edges.flatMap(listed));
  const wanted = [
    ...counted,
    ...new Set(controls),
    ...goals.map((goal) => goal.id),
    ...tallies,
    ...lists,
  ];
  const ways = waysTaking(exploration, wanted, labelsOf);
  const paths = fewestTaking(ways, wanted, labelsOf).map((way) => ({
    steps: way.map(({ event }) => ({ stage: event.from, outcome: event.outcome })),
    end: exploration.states[way.at(-1)?.to ?? 0]?.snapshot.value as PathEnd,
  }));
  const missing = counted.filter((transition) => !ways.has(transition));
  return {
    paths,
    untaken: whyUntaken(pipeline, missing, bounds, exploration, machine),
    exploration,
  };
}

/**
 * The bounds a walk covering the boundaries needs: as many visits as the thresholds count, and
 * the groups' tallies told apart.
 */
export function boundaryBounds(
  pipeline: PipelineDefinition,
  options: TraversalOptions,
): TraversalOptions {
  const goals = boundaryGoals(pipeline, traversalOf(pipeline, options).outcomes, options.ctx);
  return {
    ...options,
    maxVisits: Math.max(options.maxVisits, boundaryReach(goals)),
    tallies: true,
  };
}

/** A walk of a pipeline's model, and the machine it was walked on. */
export interface Walk {
  machine: AnyStateMachine;
  exploration: Exploration;
}

/** The last walk of each pipeline, kept for the next asking for the same bounds (a walk can take seconds). */
const lastWalks = new WeakMap<PipelineDefinition, { key: string; walk: Walk }>();

/** The walk of a pipeline's model within `options`' bounds (see `explore`). */
export function walkOf(pipeline: PipelineDefinition, options: TraversalOptions): Walk {
  const key = JSON.stringify([
    options.ctx,
    options.maxVisits,
    options.events ?? [],
    options.tallies ?? false,
  ]);
  const last = lastWalks.get(pipeline);
  if (last?.key === key) return last.walk;
  const machine = modelMachine(pipeline);
  const walk = { machine, exploration: explore(machine, traversalOf(pipeline, options)) };
  lastWalks.set(pipeline, { key, walk });
  return walk;
}

/** For each transition some step takes, the shortest way through such a step that ends. */
function waysTaking(
  exploration: Exploration,
  wanted: readonly string[],
  labelsOf: (edge: ExploredEdge) => readonly string[] = (edge) => edge.transitions,
): Map<string, ExploredEdge[]> {
  const { states } = exploration;
  const lengthThrough = (edge: ExploredEdge) =>
    (states[edge.from]?.depth ?? 0) + 1 + (states[edge.to]?.endDistance ?? Infinity);
  const best = new Map<string, ExploredEdge>();
  const counted = new Set(wanted);
  for (const edge of exploration.edges) {
    if (lengthThrough(edge) === Infinity) continue;
    for (const transition of labelsOf(edge)) {
      if (!counted.has(transition)) continue;
      const known = best.get(transition);
      if (!known || lengthThrough(edge) < lengthThrough(known)) best.set(transition, edge);
    }
  }
  return new Map(
    [...best].map(([transition, edge]) => [transition, wayThrough(exploration, edge)]),
  );
}

/** A few of the ways that together take every transition they take, picked greedily. */
function fewestTaking(
  ways: ReadonlyMap<string, ExploredEdge[]>,
  wanted: readonly string[],
  labelsOf: (edge: ExploredEdge) => readonly string[],
): ExploredEdge[][] {
  const counted = new Set(wanted);
  const unique = new Map<string, { way: ExploredEdge[]; takes: Set<string> }>();
  for (const way of ways.values()) {
    const key = way.map((edge) => `${edge.from}>${edge.to}:${edge.event.outcome}`).join(" ");
    if (unique.has(key)) continue;
    const takes = new Set(way.flatMap((edge) => labelsOf(edge).filter((t) => counted.has(t))));
    unique.set(key, { way, takes });
  }
  let left = [...unique.values()];
  const taken = new Set<string>();
  const chosen: ExploredEdge[][] = [];
  const gain = (takes: Set<string>) => [...takes].filter((t) => !taken.has(t)).length;
  for (;;) {
    let best: (typeof left)[number] | undefined;
    for (const candidate of left) {
      if (!best) best = candidate;
      else {
        const [a, b] = [gain(candidate.takes), gain(best.takes)];
        if (a > b || (a === b && candidate.way.length < best.way.length)) best = candidate;
      }
    }
    if (!best || gain(best.takes) === 0) break;
    chosen.push(best.way);
    for (const t of best.takes) taken.add(t);
    left = left.filter((candidate) => candidate !== best);
  }
  return chosen;
}

/** The stage whose done event a transition is taken by, when it is a stage's. */
const stageTaking = (pipeline: PipelineDefinition, transition: string): string | undefined => {
  const stage = /\[xstate\.done\.actor\.([^:\]]+)/.exec(transition)?.[1];
  return stage !== undefined && stage in pipeline.stages ? stage : undefined;
};

/** How many of the states where a stage runs are stepped with each of its ruled-out results. */
const STATES_TRIED = 24;

/**
 * Why no path takes each of `missing`, checked on the model: exploring again with a higher
 * `--max-visits` finds a path that takes it and ends; or, none doing so, stepping the model from
 * states where the stage runs with the result of an outcome its schema rules out takes it.
 * Otherwise, that no path does within the highest bound tried.
 */
export function whyUntaken(
  pipeline: PipelineDefinition,
  missing: readonly string[],
  options: TraversalOptions,
  exploration: Exploration = explore(modelMachine(pipeline), traversalOf(pipeline, options)),
  machine: AnyStateMachine = modelMachine(pipeline),
): Untaken[] {
  const reasons = new Map<string, string>();
  // A list other than the transitions' own (`cover: "states"`, a saved one) may miss what a path takes.
  for (const transition of waysTaking(exploration, missing).keys())
    reasons.set(
      transition,
      `no path of the list takes it, though one does within --max-visits ${options.maxVisits} (paths --cover transitions)`,
    );
  let left = missing.filter((transition) => !reasons.has(transition));
  let highest = options.maxVisits;
  for (const bound of boundsBeyond(pipeline, options.maxVisits)) {
    if (left.length === 0) break;
    let wider: Exploration;
    try {
      wider = explore(machine, traversalOf(pipeline, { ...options, maxVisits: bound }));
    } catch (error) {
      if (isStagechartError(error) && error.code === "Validation/PathLimitExceeded") break;
      throw error;
    }
    highest = bound;
    for (const transition of waysTaking(wider, left).keys())
      reasons.set(
        transition,
        `beyond --max-visits ${options.maxVisits}: a path takes it with --max-visits ${bound}`,
      );
    left = left.filter((transition) => !reasons.has(transition));
  }
  const stepper = stepperOf(machine);
  for (const transition of left) {
    const stage = stageTaking(pipeline, transition);
    if (stage === undefined) continue;
    const where = exploration.states
      .filter((state) => activeStages(state.snapshot).includes(stage))
      .slice(0, STATES_TRIED);
    const ruledOut = ruledOutResults(pipeline, stage).find(({ result }) =>
      where.some((state) =>
        stepper.step(state.snapshot, stageDone(stage, result)).transitions.includes(transition),
      ),
    );
    if (ruledOut)
      reasons.set(
        transition,
        `guard unsatisfiable under the schema: within --max-visits ${highest}, only ${stage}'s outcome "${ruledOut.name}" takes it, and ${ruledOut.reason}`,
      );
  }
  left = left.filter((transition) => !reasons.has(transition));
  for (const transition of left)
    reasons.set(transition, notFound(pipeline, transition, exploration, highest));
  return missing.map((transition) => ({ transition, reason: reasons.get(transition) as string }));
}

/** Why no path is found for a transition when neither a higher bound nor the schema explains it. */
function notFound(
  pipeline: PipelineDefinition,
  transition: string,
  exploration: Exploration,
  bound: number,
): string {
  const source = /^[^.]+\.([^ .]+)/.exec(transition)?.[1];
  const stage = source === undefined ? undefined : stageOfState(source);
  const within = `no path takes it within --max-visits ${bound}`;
  const group = stage === undefined ? undefined : mapGroupAfter(pipeline, stage);
  if (group?.over.startsWith("ctx.") && transition.endsWith(": list refused]"))
    return `${within}: ${group.over} is a list in the run's ctx, which the paths' ctx gives`;
  if (group && transition.endsWith(": list refused]"))
    return `${within}: the model has ${stage} hand on only lists at ${group.over}, none longer than ${
      group.maxItems === undefined
        ? "maxItems (declare maxItems to have a path with one item too many)"
        : "its schema allows"
    }`;
  if (stage !== undefined && pipeline.stages[stage]?.kind === "pipeline")
    return `${within}: ${stage} is a sub-pipeline stage, and no way its run ends (a stage's outcome that sends it to done, fail or cancel) gives a result that takes it`;
  const entered = exploration.states.some((state) => state.snapshot.value === source);
  return entered || stage === undefined
    ? `${within}: no outcome the model has of ${stage ?? "its stage"} takes it from the states the paths reach`
    : `${within}: ${stage} is never entered`;
}

/**
 * The higher bounds a transition beyond `--max-visits` is looked for under: one and two more,
 * and up to one more than the highest `visits` a rule compares with (at most four more).
 */
function boundsBeyond(pipeline: PipelineDefinition, maxVisits: number): number[] {
  const compared: number[] = [];
  const visit = (condition: Condition): void => {
    if ("all" in condition) condition.all.forEach(visit);
    else if ("any" in condition) condition.any.forEach(visit);
    else if ("not" in condition) visit(condition.not);
    else if ("visits" in condition) compared.push(condition.value);
  };
  for (const transition of Object.values(pipeline.next))
    if (transition.kind === "rules")
      for (const rule of transition.rules) if (rule.when) visit(rule.when);
  const upper = Math.min(maxVisits + 4, Math.max(maxVisits + 2, Math.max(0, ...compared) + 1));
  return Array.from({ length: upper - maxVisits }, (_, i) => maxVisits + 1 + i);
}
