import { moduleUnimported } from "./code-reference.js";
import type { LoadResult } from "./diagnostics.js";
import { createPipelineLoader } from "./pipeline-loader.js";
import type { PipelineDefinition } from "./pipeline-types.js";

export { BUILTIN_TOOL_NAMES } from "./pipeline-loader.js";

export interface PipelineLoadOptions {
  /** The tools of the host the pipeline will run on; `allowedTools` may name only these. */
  toolNames?: readonly string[];
  /**
   * false: the structure only, for drawing — no code module is imported (nothing of the
   * pipeline's code runs); each code reference stands in as a function that is never run.
   */
  importCode?: boolean;
}

/**
 * Loads a YAML pipeline (`machines/*.yaml`), its stage files and sub-pipelines, relative to the
 * file. Never throws: the definition, or every problem found, each at its file, line and column.
 */
export function loadPipelineFile(
  file: string,
  options: PipelineLoadOptions = {},
): Promise<LoadResult<PipelineDefinition>> {
  const loadModule = options.importCode === false ? moduleUnimported : undefined;
  return createPipelineLoader(options.toolNames, loadModule).pipelineFile(file);
}
