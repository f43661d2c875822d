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
