import type { PipelineSpec } from "../definitions/pipeline-spec.js";
import { arenaDebate } from "./arena-debate/index.js";
import { taskLifecycle } from "./task-lifecycle/index.js";

/**
 * The bundled pipelines written in TypeScript, by name. Their stage files are relative to the
 * package's machines/ directory, where their scripted models live too.
 */
export const BUNDLED_CODE_PIPELINES: Readonly<Record<string, PipelineSpec>> = {
  "arena-debate": arenaDebate as PipelineSpec,
  "task-lifecycle": taskLifecycle as PipelineSpec,
};
