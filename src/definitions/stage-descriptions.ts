import type { PipelineDefinition, PipelineStage } from "./pipeline-types.js";

/**
 * What a stage is for, in its author's words: an LLM stage's `description`, or the description
 * of the pipeline a pipeline stage runs. Code, command and ask stages have none.
 */
export function descriptionOf(stage: PipelineStage): string | undefined {
  if (stage.kind === "llm") return stage.definition.description;
  return stage.kind === "pipeline" ? stage.pipeline.description : undefined;
}

/** The descriptions of the pipeline's own stages, by stage id. */
export function stageDescriptions(pipeline: PipelineDefinition): Map<string, string> {
  const found = new Map<string, string>();
  for (const stage of Object.values(pipeline.stages)) {
    const description = descriptionOf(stage);
    if (description !== undefined) found.set(stage.id, description);
  }
  return found;
}

/**
 * The descriptions of every stage a run of the pipeline may execute, sub-pipelines' included,
 * by the path of stage ids a stage execution id names (`review`, `sandbox/self-heal`), so that
 * what is stored with a run can describe each of its stage executions.
 */
export function stageDescriptionsByPath(pipeline: PipelineDefinition): Record<string, string> {
  const found: Record<string, string> = {};
  const walk = (current: PipelineDefinition, prefix: string, seen: Set<PipelineDefinition>) => {
    if (seen.has(current)) return;
    for (const stage of Object.values(current.stages)) {
      const description = descriptionOf(stage);
      if (description !== undefined) found[`${prefix}${stage.id}`] = description;
      if (stage.kind === "pipeline")
        walk(stage.pipeline, `${prefix}${stage.id}/`, new Set([...seen, current]));
    }
  };
  walk(pipeline, "", new Set());
  return found;
}

/**
 * The path of stage ids a stage execution id names: `run-1/sandbox/1/self-heal/2` → `sandbox/self-heal`
 * (the run id first, then a stage id and its visit per level).
 */
export function stagePathOf(runId: string, stageExecutionId: string): string | undefined {
  if (!stageExecutionId.startsWith(`${runId}/`)) return undefined;
  const segments = stageExecutionId.slice(runId.length + 1).split("/");
  return segments.filter((_, i) => i % 2 === 0).join("/");
}
