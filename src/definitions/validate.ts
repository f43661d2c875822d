import { importModuleUnhashed } from "./code-reference.js";
import { byPosition, type Diagnostic, type LoadResult, uniqueDiagnostics } from "./diagnostics.js";
import { definitionKind, expandDefinitionPaths } from "./files.js";
import { validateWorkflows } from "./pi-workflows/validate.js";
import { BUILTIN_TOOL_NAMES, createPipelineLoader } from "./pipeline-loader.js";

export interface ValidationReport {
  files: string[];
  diagnostics: Diagnostic[];
}

export interface ValidateOptions {
  /** The host's tool names, for pipelines' `allowedTools`; the built-in tools by default. */
  toolNames?: readonly string[];
  /** Validates a `*.script.yaml` file; without it, scripted-model files are skipped. */
  loadScript?: (file: string) => Promise<LoadResult<unknown>>;
}

/**
 * Loads every definition file under `paths` — stage files, pipelines (with their stage files)
 * and, given a loader, scripted-model files — and pi-workflows workflow directories (see
 * `expandDefinitionPaths`), and collects every diagnostic once, sorted by place.
 */
export async function validatePaths(
  paths: readonly string[],
  options: ValidateOptions = {},
): Promise<ValidationReport> {
  // Only the diagnostics are kept: no definition, so no module's hash.
  const loader = createPipelineLoader(options.toolNames, importModuleUnhashed);
  const { loadScript } = options;
  const expanded = await expandDefinitionPaths(paths);
  const files = expanded.files.filter((file) => loadScript || definitionKind(file) !== "script");
  const workflows = await validateWorkflows(
    expanded.workflows,
    options.toolNames ?? BUILTIN_TOOL_NAMES,
  );
  const diagnostics: Diagnostic[] = [...expanded.diagnostics, ...workflows.diagnostics];
  // One file at a time: pipelines share the loader's stage files and sub-pipelines.
  for (const file of files) {
    const kind = definitionKind(file);
    const result =
      kind === "pipeline"
        ? await loader.pipelineFile(file)
        : kind === "script" && loadScript
          ? await loadScript(file)
          : (await loader.stageFile(file)).result;
    diagnostics.push(...(result.ok ? result.warnings : result.diagnostics));
  }
  return {
    files: [...files, ...workflows.files],
    diagnostics: uniqueDiagnostics(diagnostics).sort(byPosition),
  };
}
