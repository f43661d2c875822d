import type { LoadResult } from "./diagnostics.js";
import type { PipelineLoadOptions } from "./pipeline.js";
import { createPipelineLoader } from "./pipeline-loader.js";
import type { PipelineSpec, StageSpec } from "./pipeline-spec.js";
import type { PipelineDefinition } from "./pipeline-types.js";

/**
 * Types a TypeScript pipeline: targets, `visits` and hook keys must be its stage ids, and
 * `guard` names its guards; a stage whose `completion` is a zod schema gets hooks typed with its
 * payload. Returns the spec unchanged; `loadPipeline` validates it (and converts zod schemas).
 */
export function definePipeline<
  const Id extends string,
  G extends string = never,
  const S extends Record<Id, StageSpec> = Record<Id, StageSpec>,
>(spec: PipelineSpec<Id, G, S>): PipelineSpec<Id, G, S> {
  return spec;
}

export interface LoadPipelineOptions extends PipelineLoadOptions {
  /** What the spec's file paths are relative to; the working directory by default. */
  baseDir?: string;
}

/**
 * Validates a TypeScript pipeline into the same definition a YAML file gives, with the same
 * checks. Never throws: problems in the spec point at `<id>.ts (definePipeline)` and name the path.
 */
export function loadPipeline(
  spec: PipelineSpec,
  options: LoadPipelineOptions = {},
): Promise<LoadResult<PipelineDefinition>> {
  const loader = createPipelineLoader(options.toolNames);
  return loader.pipelineSpec(spec, options.baseDir ?? ".");
}
