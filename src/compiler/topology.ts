import { DONE, FAIL, type PipelineDefinition, type Target } from "../definitions/pipeline-types.js";

/** The targets a stage's transition may lead to, siblings and join of a parallel group included. */
export function successors(pipeline: PipelineDefinition, stageId: string): Target[] {
  const transition = pipeline.next[stageId];
  if (!transition) return [DONE, FAIL];
  if (transition.kind === "parallel") return [...transition.siblings, transition.join, FAIL];
  return [...transition.rules.map((rule) => rule.to), FAIL];
}

/** Every stage a run can get to from `stageId` along declared transitions (itself excluded unless on a loop). */
export function reachableStages(pipeline: PipelineDefinition, stageId: string): string[] {
  const seen = new Set<string>();
  const queue = successors(pipeline, stageId);
  while (queue.length > 0) {
    const next = queue.shift() as string;
    if (seen.has(next) || !(next in pipeline.stages)) continue;
    seen.add(next);
    queue.push(...successors(pipeline, next));
  }
  return Object.keys(pipeline.stages).filter((id) => seen.has(id));
}

/** The parallel group a stage belongs to as a sibling, by the id of the stage that fans out. */
export function groupOf(pipeline: PipelineDefinition, stageId: string): string | undefined {
  return Object.entries(pipeline.next).find(
    ([, transition]) => transition.kind === "parallel" && transition.siblings.includes(stageId),
  )?.[0];
}

/** Siblings run inside their group's parallel state; they have a state of their own only if a rule leads to them. */
export function onlyASibling(pipeline: PipelineDefinition, stageId: string): boolean {
  const transitions = Object.values(pipeline.next);
  const sibling = transitions.some((t) => t.kind === "parallel" && t.siblings.includes(stageId));
  const targeted =
    pipeline.entry === stageId ||
    transitions.some((t) =>
      t.kind === "rules" ? t.rules.some((r) => r.to === stageId) : t.join === stageId,
    );
  return sibling && !targeted;
}

/**
 * The stages an OVERRIDE may move a run to from `stageId`: those a rule leads to from here or
 * from a stage reachable from here. A sibling is entered only by its fan-out and a join only by
 * its group completing, so neither is a target through those ways in.
 */
export function overrideTargets(pipeline: PipelineDefinition, stageId: string): string[] {
  if (pipeline.override === "adjacent") return adjacentStages(pipeline, stageId);
  const reachable = reachableStages(pipeline, stageId);
  const ruleTargets = new Set(
    [stageId, ...reachable].flatMap((id) => {
      const transition = pipeline.next[id];
      return transition?.kind === "rules" ? transition.rules.map((rule) => rule.to) : [];
    }),
  );
  return reachable.filter((id) => ruleTargets.has(id));
}

/**
 * The stages a REDO may re-enter from `stageId` (once they have run): this one or one a run could
 * have come here through; in an `adjacent` pipeline only this one or a stage a rule of it leads
 * to, so that a redo never skips a stage either.
 */
export function redoTargets(pipeline: PipelineDefinition, stageId: string): string[] {
  if (pipeline.override === "adjacent")
    return Object.keys(pipeline.stages).filter(
      (id) => id === stageId || adjacentStages(pipeline, stageId).includes(id),
    );
  return Object.keys(pipeline.stages).filter(
    (id) => id === stageId || reachableStages(pipeline, id).includes(stageId),
  );
}

/** The stages a rule of `stageId` leads to: the only override targets of an `adjacent` pipeline. */
function adjacentStages(pipeline: PipelineDefinition, stageId: string): string[] {
  const transition = pipeline.next[stageId];
  const targets = transition?.kind === "rules" ? transition.rules.map((rule) => rule.to) : [];
  return Object.keys(pipeline.stages).filter((id) => targets.includes(id));
}
