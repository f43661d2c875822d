import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { stageDescriptionsByPath } from "../definitions/stage-descriptions.js";

/**
 * What `RunStarted` says of a run: its pipeline, `fields`, and what each of its stages is for
 * (`stageDescriptions`, by the path of stage ids, see `stageDescriptionsByPath`), so that `show`
 * can say it from the store alone.
 */
export function runStartedPayload(
  pipeline: PipelineDefinition,
  fields: Record<string, unknown>,
): Record<string, unknown> {
  const descriptions = stageDescriptionsByPath(pipeline);
  return {
    pipelineId: pipeline.id,
    ...fields,
    ...(Object.keys(descriptions).length > 0 && { stageDescriptions: descriptions }),
  };
}
