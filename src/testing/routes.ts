import { ruleHolds } from "../compiler/conditions.js";
import { tableOf } from "../compiler/stage-table.js";
import type { StageResult } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";

/**
 * Where a stage's result sends a run, as the compiled machine routes it: the target of the first
 * rule that holds (`fail` when none does), the group it fans out to, or, for a stage with no
 * transition, `done` or `fail`.
 */
export function routeOf(
  pipeline: PipelineDefinition,
  stage: string,
  result: StageResult,
  run: { ctx: Readonly<Record<string, unknown>>; visits: Readonly<Record<string, number>> },
): string {
  const transition = pipeline.next[stage];
  const succeeded = result.verdict === "ok" || result.verdict === "skip";
  if (!transition) return succeeded ? "done" : "fail";
  if (transition.kind !== "rules") return succeeded ? `${stage}'s group` : "fail";
  const facts = { ctx: run.ctx, visits: tableOf(run.visits) };
  const rule = transition.rules.find((r) => ruleHolds(r, result, facts, pipeline.guards));
  return rule?.to ?? "fail";
}
