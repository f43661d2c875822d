import { byEnUsCollation } from "../en-us-order.js";
import type { ErrorCode } from "../errors.js";

/** Every problem a definition file (stage, pipeline, script) can have, each pointing at a place in it. */
export const DIAGNOSTIC_CODES = {
  fileUnreadable: "Validation/StageFileUnreadable",
  fileNotMarkdown: "Validation/StageFileNotMarkdown",
  fileBinary: "Validation/StageFileBinary",
  stageFileTooLarge: "Validation/StageFileTooLarge",
  pipelineFileTooLarge: "Validation/PipelineFileTooLarge",
  scriptFileTooLarge: "Validation/ScriptFileTooLarge",
  workflowFileTooLarge: "Validation/WorkflowFileTooLarge",
  fileEmpty: "Validation/StageFileEmpty",
  frontmatterMissing: "Validation/StageFrontmatterMissing",
  yamlInvalid: "Validation/StageYamlInvalid",
  definitionInvalid: "Validation/StageDefinitionInvalid",
  fieldUnknown: "Validation/StageFieldUnknown",
  missingField: "Validation/StageMissingField",
  idInvalid: "Validation/StageIdInvalid",
  turnCapTooLow: "Validation/StageTurnCapTooLow",
  completionSchemaInvalid: "Validation/StageCompletionSchemaInvalid",
  inputsSchemaInvalid: "Validation/StageInputsSchemaInvalid",
  completionToolCollision: "Validation/CompletionToolCollision",
  templateForbidden: "Validation/TemplateForbidden",
  templateSyntax: "Validation/TemplateSyntax",
  bodyEmpty: "Validation/StageBodyEmpty",
  ctxUnresolved: "Validation/StageCtxUnresolved",
  scriptInvalid: "Validation/ScriptInvalid",
  scriptYamlInvalid: "Validation/ScriptYamlInvalid",
  scriptStageUnknown: "Validation/ScriptStageUnknown",
  scriptStageMissing: "Validation/ScriptStageMissing",
  pipelineFileNotYaml: "Validation/PipelineFileNotYaml",
  pipelineYamlInvalid: "Validation/PipelineYamlInvalid",
  pipelineDefinitionInvalid: "Validation/PipelineDefinitionInvalid",
  pipelineMissingField: "Validation/PipelineMissingField",
  pipelineIdInvalid: "Validation/PipelineIdInvalid",
  pipelineContextInvalid: "Validation/PipelineContextInvalid",
  pipelineSchemaUnconvertible: "Validation/PipelineSchemaUnconvertible",
  pipelineEntryUnknown: "Validation/PipelineEntryUnknown",
  pipelineTargetUnknown: "Validation/PipelineTargetUnknown",
  pipelineStageInvalid: "Validation/PipelineStageInvalid",
  pipelineCycle: "Validation/PipelineCycle",
  pipelineUnboundedLoop: "Validation/PipelineUnboundedLoop",
  grantRuleInvalid: "Validation/PipelineGrantRuleInvalid",
  waitTimeoutInvalid: "Validation/WaitTimeoutInvalid",
  guardUnknown: "Validation/GuardUnknown",
  codeReferenceInvalid: "Validation/CodeReferenceInvalid",
  codeReferenceOutsideRoot: "Validation/CodeReferenceOutsideRoot",
  codeModuleUnloadable: "Validation/CodeModuleUnloadable",
  codeExportMissing: "Validation/CodeExportMissing",
  codeExportNotFunction: "Validation/CodeExportNotFunction",
  stageIdMismatch: "Validation/StageIdMismatch",
  joinDangling: "Validation/StageJoinDangling",
  invalidParallelPlan: "ExtensionHost/InvalidParallelPlan",
  mapOverUnknown: "Validation/MapOverUnknown",
  mapPlanInvalid: "Validation/MapPlanInvalid",
  stageUnreachable: "Validation/StageUnreachable",
  stageNoExit: "Validation/StageNoExit",
  unknownTool: "Validation/UnknownTool",
  outputFieldUnknown: "Validation/StageOutputFieldUnknown",
  workflowInvalid: "Validation/WorkflowInvalid",
  workflowPhaseInvalid: "Validation/WorkflowPhaseInvalid",
  workflowPathUnsafe: "Validation/WorkflowPathUnsafe",
  workflowCycle: "Validation/WorkflowCycle",
  workflowReferenceBroken: "Validation/WorkflowReferenceBroken",
  workflowNotRunnable: "Validation/WorkflowNotRunnable",
  workflowCommandDuplicate: "Validation/WorkflowCommandDuplicate",
} as const satisfies Record<string, ErrorCode>;

export type DiagnosticCode = (typeof DIAGNOSTIC_CODES)[keyof typeof DIAGNOSTIC_CODES];

export type Severity = "error" | "warning";

export interface Position {
  /** 1-based line in the file. */
  line: number;
  /** 1-based column in the file. */
  column: number;
}

export interface Diagnostic extends Position {
  file: string;
  code: DiagnosticCode;
  severity: Severity;
  message: string;
}

/** The outcome of loading a definition: the typed value, or every problem found. */
export type LoadResult<T> =
  | { ok: true; value: T; warnings: Diagnostic[] }
  | { ok: false; diagnostics: Diagnostic[] };

export const START: Position = { line: 1, column: 1 };

export function diagnostic(
  file: string,
  at: Position,
  code: DiagnosticCode,
  message: string,
  severity: Severity = "error",
): Diagnostic {
  return { file, line: at.line, column: at.column, code, severity, message };
}

export const isError = (d: Diagnostic): boolean => d.severity === "error";

/** `file:line:col code message`, the form editors and CI logs link to. */
export function formatDiagnostic(d: Diagnostic): string {
  const message = d.severity === "warning" ? `warning: ${d.message}` : d.message;
  return `${d.file}:${d.line}:${d.column} ${d.code} ${message}`;
}

export function byPosition(a: Diagnostic, b: Diagnostic): number {
  return byEnUsCollation(a.file, b.file) || a.line - b.line || a.column - b.column;
}

/** The same problem found twice (a stage file used by two pipelines, or loaded on its own too) is reported once. */
export function uniqueDiagnostics(diagnostics: readonly Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return diagnostics.filter((d) => {
    const key = JSON.stringify([d.file, d.line, d.column, d.code, d.severity, d.message]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
