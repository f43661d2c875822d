import { decideGroup } from "../compiler/pipeline-parallel.js";
import { recordOf } from "../compiler/stage-table.js";
import type { JsonValue, StageResult } from "../definitions/contract.js";
import {
  type Condition,
  DEFAULT_MAX_ITEMS,
  type JoinPolicy,
  type PipelineDefinition,
  type Transition,
} from "../definitions/pipeline-types.js";
import type { Exploration } from "./exploration.js";
import { listLengths } from "./map-lists.js";
import { activeStages } from "./model.js";
import type { Mutant } from "./mutants.js";
import { resultFor, stageOutcomes } from "./outcomes.js";
import { payloadFor } from "./payloads.js";
import { routeOf } from "./routes.js";
import { ANY_OBJECT, MAX_SPLIT_CONDITIONS, payloadConditions, truthTable } from "./splits.js";

/**
 * What a mutant does otherwise than the pipeline it was made from, as one example; none when it
 * behaves the same everywhere (an equivalent mutant). A mutant changes one stage's transition,
 * so it behaves the same iff that transition routes every result the same under every count of
 * visits: each outcome either pipeline tells apart for the stage, under every count of visits
 * around each `visits` threshold either compares with (which decide the same as any other
 * count); for a group, every tally its siblings can reach while both policies wait.
 */
export function behaviourDifference(
  original: PipelineDefinition,
  mutant: Mutant,
  ctx: Record<string, unknown>,
): string | undefined {
  const before = original.next[mutant.stage];
  const after = mutant.pipeline.next[mutant.stage];
  if (before?.kind === "parallel" && after?.kind === "parallel") {
    if (before.join !== after.join)
      return `the group after ${mutant.stage} joins at ${after.join}, not ${before.join}`;
    return policyDifference(mutant.stage, before.siblings.length, before.policy, after.policy);
  }
  if (before?.kind === "map" && after?.kind === "map") {
    if (before.join !== after.join)
      return `the group after ${mutant.stage} joins at ${after.join}, not ${before.join}`;
    // A map group's size is its list's: each length the model drives its fan-out to hand on.
    const max = before.maxItems ?? DEFAULT_MAX_ITEMS;
    for (const n of listLengths(before).filter((length) => length <= max)) {
      const differs = policyDifference(mutant.stage, n, before.policy, after.policy);
      if (differs) return differs;
    }
    return undefined;
  }
  const endings = representatives(original, mutant);
  for (const visits of visitCounts(mutant.stage, [before, after])) {
    for (const { label, result } of endings) {
      const was = routeOf(original, mutant.stage, result, { ctx, visits });
      const now = routeOf(mutant.pipeline, mutant.stage, result, { ctx, visits });
      if (was !== now) return `${situation(label, visits)}: goes to ${now}, not ${was}`;
    }
  }
  return undefined;
}

/**
 * Where a run of the pipeline goes otherwise on the mutant, as one example: a state of the walk
 * where the mutated stage runs and one of its outcomes (either pipeline's) is routed otherwise
 * under the run's own visit counts. None: the mutant differs only where no run of the walk goes
 * (a count of visits no run reaches), so within its bounds it behaves the same.
 */
export function reachableDifference(
  original: PipelineDefinition,
  mutant: Mutant,
  exploration: Exploration,
  ctx: Record<string, unknown>,
): string | undefined {
  // Every tally `behaviourDifference` walks is one some order of the siblings' ends reaches.
  const kind = mutant.pipeline.next[mutant.stage]?.kind;
  if (kind === "parallel" || kind === "map") return behaviourDifference(original, mutant, ctx);
  const endings = representatives(original, mutant);
  for (const { snapshot } of exploration.states) {
    if (!activeStages(snapshot).includes(mutant.stage)) continue;
    const visits = recordOf(snapshot.context.visits);
    for (const { label, result } of endings) {
      const was = routeOf(original, mutant.stage, result, { ctx, visits });
      const now = routeOf(mutant.pipeline, mutant.stage, result, { ctx, visits });
      if (was !== now) return `${situation(label, visits)}: goes to ${now}, not ${was}`;
    }
  }
  return undefined;
}

const situation = (label: string, visits: Record<string, number>): string => {
  const counted = Object.entries(visits).map(([stage, n]) => `${stage} ${n}`);
  return `${label}${counted.length > 0 ? ` with visits ${counted.join(", ")}` : ""}`;
};

/**
 * The results a stage may end with that either pipeline's rules tell apart: the outcomes each
 * pipeline's model has for it and, for a sub-pipeline stage (which the model ends only `ok` or
 * `fail`, with no output), each split of its rules' payload conditions under both verdicts, so
 * that a change to a rule the model cannot drive is not taken for no change.
 */
function representatives(
  original: PipelineDefinition,
  mutant: Mutant,
): { label: string; result: StageResult }[] {
  const outcomes = [
    ...stageOutcomes(original, mutant.stage).outcomes,
    ...stageOutcomes(mutant.pipeline, mutant.stage).outcomes,
  ].filter((o) => !o.suspends);
  const modelled = outcomes.map((o) => ({
    label: `${o.stage} ending ${o.name}`,
    result: resultFor(o),
  }));
  if (original.stages[mutant.stage]?.kind !== "pipeline") return modelled;
  const conditions = [
    ...new Map(
      [
        ...payloadConditions(original, mutant.stage),
        ...payloadConditions(mutant.pipeline, mutant.stage),
      ].map((c) => [JSON.stringify(c), c]),
    ).values(),
  ].slice(0, MAX_SPLIT_CONDITIONS);
  const split = truthTable(conditions).flatMap((requirements) => {
    const output = payloadFor(ANY_OBJECT, requirements);
    if (!output.ok) return [];
    return (["ok", "fail"] as const).map((verdict) => ({
      label: `${mutant.stage} ending ${verdict} with output ${JSON.stringify(output.value)}`,
      result: {
        stageId: mutant.stage,
        stageExecutionId: `${mutant.stage}/1`,
        verdict,
        capHit: false,
        attemptCount: 1,
        output: output.value as JsonValue,
      },
    }));
  });
  return [...modelled, ...split];
}

/**
 * Every combination of visit counts the two transitions can tell apart: per stage a `visits`
 * condition names, none (0), each threshold and its neighbours; the stage itself was entered
 * at least once.
 */
function visitCounts(
  stage: string,
  transitions: readonly (Transition | undefined)[],
): Record<string, number>[] {
  const thresholds = new Map<string, Set<number>>();
  const visit = (condition: Condition): void => {
    if ("all" in condition) condition.all.forEach(visit);
    else if ("any" in condition) condition.any.forEach(visit);
    else if ("not" in condition) visit(condition.not);
    else if ("visits" in condition) {
      const values = thresholds.get(condition.visits) ?? new Set([0]);
      for (const v of [condition.value - 1, condition.value, condition.value + 1]) values.add(v);
      thresholds.set(condition.visits, values);
    }
  };
  for (const transition of transitions)
    if (transition?.kind === "rules")
      for (const rule of transition.rules) if (rule.when) visit(rule.when);
  return [...thresholds].reduce<Record<string, number>[]>(
    (combos, [counted, values]) =>
      combos.flatMap((combo) =>
        [...values]
          .filter((n) => n >= (counted === stage ? 1 : 0))
          .map((n) => ({ ...combo, [counted]: n })),
      ),
    [{}],
  );
}

/** The first tally of `n` siblings, reached while both policies wait, where they decide otherwise. */
function policyDifference(
  stage: string,
  n: number,
  before: JoinPolicy,
  after: JoinPolicy,
): string | undefined {
  const seen = new Set<string>();
  const queue = [{ ok: 0, failed: 0 }];
  for (const { ok, failed } of queue) {
    const tally = { siblings: n, started: n, running: n - ok - failed, ok, failed };
    const [was, now] = [decideGroup(before, tally), decideGroup(after, tally)];
    if (was !== now)
      return `the group after ${stage}, ${ok} of ${n} siblings ok and ${failed} not: ${now ?? "waits"}, not ${was ?? "waits"}`;
    if (was !== undefined || ok + failed === n) continue;
    for (const next of [
      { ok: ok + 1, failed },
      { ok, failed: failed + 1 },
    ]) {
      const key = `${next.ok}/${next.failed}`;
      if (!seen.has(key)) {
        seen.add(key);
        queue.push(next);
      }
    }
  }
  return undefined;
}
