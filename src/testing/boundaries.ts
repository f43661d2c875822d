import { ruleHolds } from "../compiler/conditions.js";
import { siblingState } from "../compiler/pipeline-parallel.js";
import { stageOfState } from "../compiler/pipeline-states.js";
import { EMPTY_TABLE, lookup } from "../compiler/stage-table.js";
import {
  type Condition,
  DEFAULT_MAX_ITEMS,
  type PipelineDefinition,
} from "../definitions/pipeline-types.js";
import type { Exploration, ExploredEdge } from "./exploration.js";
import { listLengths } from "./map-lists.js";
import { resultFor, type StageOutcome } from "./outcomes.js";

/**
 * A `visits` threshold of a rule at its boundary: a step from a state where the stage has been
 * entered `count` times (the count the rule compares), ending with an outcome the rest of the
 * rule lets through. A path through each boundary tells the threshold from its neighbours (`lt
 * 5` from `lt 4` and `lt 6`), which transition coverage alone does not.
 */
export interface BoundaryGoal {
  /** `boundary: accept rule 2 at visits codegen 4`. */
  id: string;
  stage: string;
  outcomes: ReadonlySet<string>;
  counted: string;
  count: number;
}

/** The counts on either side of a threshold that a comparison tells apart. */
const SIDES = { lt: [-1, 0], lte: [0, 1], gt: [0, 1], gte: [-1, 0], equals: [-1, 0, 1] } as const;

/** The boundaries of every `visits` threshold of the pipeline's rules. */
export function boundaryGoals(
  pipeline: PipelineDefinition,
  outcomes: ReadonlyMap<string, readonly StageOutcome[]>,
  ctx: Record<string, unknown>,
): BoundaryGoal[] {
  return Object.entries(pipeline.next).flatMap(([stage, transition]) => {
    if (transition.kind !== "rules") return [];
    return transition.rules.flatMap((rule, at) => {
      if (!rule.when) return [];
      const rest = { ...rule, when: withoutVisits(rule.when) };
      const letThrough = new Set(
        (outcomes.get(stage) ?? []).flatMap((o) =>
          !o.suspends && ruleHolds(rest, resultFor(o), { ctx, visits: {} }, pipeline.guards)
            ? [o.name]
            : [],
        ),
      );
      if (letThrough.size === 0) return [];
      return thresholdsOf(rule.when).flatMap(({ counted, op, value }) =>
        SIDES[op]
          .map((side) => value + side)
          .filter((count) => count >= (counted === stage ? 1 : 0))
          .map((count) => ({
            id: `boundary: ${stage} rule ${at + 1} at visits ${counted} ${count}`,
            stage,
            outcomes: letThrough,
            counted,
            count,
          })),
      );
    });
  });
}

/** The highest count a boundary needs a stage to have been entered. */
export const boundaryReach = (goals: readonly BoundaryGoal[]): number =>
  Math.max(0, ...goals.map((goal) => goal.count));

/** A group of at most this many siblings has each of its tallies covered. */
const TALLIED_GROUP = 6;

/**
 * The tallies of each small group (how many of its siblings ended ok, how many not; a map
 * group's, in the lists it is modelled with) a sibling settling can leave it at: a path through
 * each tells its policy from every other, which transition coverage (any sibling settling takes
 * the group's one `settled`) does not.
 */
export function tallyGoals(pipeline: PipelineDefinition): string[] {
  return Object.entries(pipeline.next).flatMap(([group, transition]) => {
    if (transition.kind === "rules") return [];
    // A map group's, in the longest list the model hands it (no longer than a tallied group).
    const max = transition.kind === "map" ? (transition.maxItems ?? DEFAULT_MAX_ITEMS) : 0;
    const n =
      transition.kind === "parallel"
        ? transition.siblings.length
        : Math.max(
            ...listLengths(transition).filter((length) => length <= Math.min(max, TALLIED_GROUP)),
          );
    if (n > TALLIED_GROUP) return [];
    return Array.from({ length: n + 1 }, (_, ok) =>
      Array.from({ length: n - ok + 1 }, (_, failed) => ({ ok, failed })),
    )
      .flat()
      .filter(({ ok, failed }) => ok + failed > 0)
      .map(({ ok, failed }) => tallyGoal(group, ok, failed));
  });
}

const tallyGoal = (group: string, ok: number, failed: number): string =>
  `boundary: the group after ${group} at ${ok} ok, ${failed} not`;

/** The boundaries (and tallies) a step of the walk reaches. */
export function boundariesMet(
  goals: readonly BoundaryGoal[],
  exploration: Exploration,
): (edge: ExploredEdge) => string[] {
  const byStage = new Map<string, BoundaryGoal[]>();
  for (const goal of goals) byStage.set(goal.stage, [...(byStage.get(goal.stage) ?? []), goal]);
  return (edge) => {
    const from = exploration.states[edge.from]?.snapshot;
    const visits = from?.context.visits ?? EMPTY_TABLE;
    const reached = (byStage.get(edge.event.from) ?? []).flatMap((goal) =>
      goal.outcomes.has(edge.event.outcome) && (lookup(visits, goal.counted) ?? 0) === goal.count
        ? [goal.id]
        : [],
    );
    // A sibling settled: the tally it leaves its group at (read off the step, since the walk
    // keeps one state for tallies its policy does not tell apart).
    const group = typeof from?.value === "string" ? stageOfState(from.value) : undefined;
    if (!from || group === undefined || group === from.value) return reached;
    if (siblingState(from.context, group, edge.event.from) !== "running") return reached;
    const before = from.context.tallies?.[group] ?? { ok: 0, failed: 0 };
    const ok = (edge.event as { output?: { verdict?: string } }).output?.verdict === "ok";
    return [...reached, tallyGoal(group, before.ok + (ok ? 1 : 0), before.failed + (ok ? 0 : 1))];
  };
}

/** A condition with each `visits` comparison taken to hold. */
function withoutVisits(condition: Condition): Condition {
  if ("all" in condition) return { all: condition.all.map(withoutVisits) };
  if ("any" in condition) return { any: condition.any.map(withoutVisits) };
  if ("not" in condition) return { not: withoutVisits(condition.not) };
  return "visits" in condition ? { all: [] } : condition;
}

function thresholdsOf(
  condition: Condition,
): { counted: string; op: keyof typeof SIDES; value: number }[] {
  if ("all" in condition) return condition.all.flatMap(thresholdsOf);
  if ("any" in condition) return condition.any.flatMap(thresholdsOf);
  if ("not" in condition) return thresholdsOf(condition.not);
  return "visits" in condition
    ? [{ counted: condition.visits, op: condition.op, value: condition.value }]
    : [];
}
