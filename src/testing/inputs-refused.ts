import type { StageResult } from "../definitions/contract.js";
import { compileSchema } from "../definitions/json-schema.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { type Placeholder, renderTemplate } from "../definitions/template.js";

/** Whether a stage's `inputsSchema` refuses one of the results it receives: then it can only fail in Setup. */
export function refusesInputs(
  pipeline: PipelineDefinition,
  stageId: string,
  upstream: readonly StageResult[],
): boolean {
  const stage = pipeline.stages[stageId];
  const schema = stage?.kind === "llm" ? stage.definition.inputsSchema : undefined;
  if (!schema) return false;
  const validate = compileSchema(schema);
  return validate.ok && upstream.some((result) => !validate.value(result));
}

/**
 * Whether a stage's prompt reads an upstream result it does not receive (`{{ctx.upstream[1].…}}`
 * with one result), as after an OVERRIDE to it: then its Init fails before any model call.
 */
export function missesUpstream(
  pipeline: PipelineDefinition,
  stageId: string,
  upstream: readonly StageResult[],
): boolean {
  const stage = pipeline.stages[stageId];
  if (stage?.kind !== "llm") return false;
  const parts = stage.definition.template.parts.flatMap((part) =>
    part.kind === "placeholder" && part.path[0] === "ctx" && part.path[1] === "upstream"
      ? [readable(pipeline, part, upstream)]
      : [],
  );
  const rendered = renderTemplate(
    { parts, ctxReferences: [] },
    { ctx: { upstream }, stage: { id: stageId, name: stage.definition.name } },
  );
  return !rendered.ok;
}

/**
 * What of a placeholder into `ctx.upstream` the model can check: all of it on an LLM or ask
 * stage's result, whose payload it generated; only that the result is there on a code, command or
 * sub-pipeline stage's, whose output is some object it cannot see into.
 */
function readable(
  pipeline: PipelineDefinition,
  part: Placeholder,
  upstream: readonly StageResult[],
): Placeholder {
  const [, , index] = part.path;
  const result = typeof index === "number" ? upstream[index] : undefined;
  const kind = result && pipeline.stages[result.stageId]?.kind;
  const opaque = kind !== undefined && kind !== "llm" && kind !== "ask";
  return opaque ? { ...part, path: part.path.slice(0, 3) } : part;
}
