export type * from "./contract.js";
export { definePipeline, type LoadPipelineOptions, loadPipeline } from "./define-pipeline.js";
export * from "./diagnostics.js";
export {
  type DefinitionFileKind,
  type DefinitionKind,
  definitionKind,
  expandDefinitionPaths,
  loadStageFile,
  MAX_DEFINITION_BYTES,
  readDefinitionText,
} from "./files.js";
export {
  compileSchema,
  describeSchemaErrors,
  type JsonSchema,
  type SchemaValidator,
} from "./json-schema.js";
export type * from "./memory.js";
export { loadPipelineFile, type PipelineLoadOptions } from "./pipeline.js";
export type * from "./pipeline-spec.js";
export * from "./pipeline-types.js";
export {
  type BackoffKind,
  parseStageDefinition,
  type ResolutionPolicy,
  type RetryPolicy,
  type StageDefinition,
} from "./stage.js";
export { BACKOFF_KINDS, REQUIRED_STAGE_FIELDS, RESOLUTION_POLICIES } from "./stage-schema.js";
export {
  type CtxReference,
  parseTemplate,
  renderTemplate,
  type Template,
  type TemplateScope,
} from "./template.js";
export { type ValidateOptions, type ValidationReport, validatePaths } from "./validate.js";
export type { DataPath, YamlProblem, YamlSource } from "./yaml-positions.js";
export { parseYamlSource } from "./yaml-source.js";
