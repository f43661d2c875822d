import type { LoadResult } from "./diagnostics.js";
import { createPipelineLoader } from "./pipeline-loader.js";
import type { PipelineDefinition } from "./pipeline-types.js";

export { BUILTIN_TOOL_NAMES } from "./pipeline-loader.js";

export interface PipelineLoadOptions {
  /** The tools of the host the pipeline will run on; `allowedTools` may name only these. */
  toolNames?: readonly string[];
}

/**
 * Loads a YAML pipeline (`machines/*.yaml`), its stage files and sub-pipelines, relative to the
 * file. Never throws: the definition, or every problem found, each at its file, line and column.
 */
export function loadPipelineFile(
  file: string,
  options: PipelineLoadOptions = {},
): Promise<LoadResult<PipelineDefinition>> {
  return createPipelineLoader(options.toolNames).pipelineFile(file);
}
