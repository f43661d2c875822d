import { basename, dirname, resolve } from "node:path";
import { importModuleUnhashed } from "./code-reference.js";
import { byPosition, type Diagnostic, type LoadResult, uniqueDiagnostics } from "./diagnostics.js";
import { definitionKind, expandDefinitionPaths } from "./files.js";
import { validateWorkflows } from "./pi-workflows/validate.js";
import { BUILTIN_TOOL_NAMES, createPipelineLoader } from "./pipeline-loader.js";
import type { PipelineDefinition } from "./pipeline-types.js";
import { type ScriptKeys, scriptStageDiagnostics } from "./script-stages.js";

export interface ValidationReport {
  files: string[];
  diagnostics: Diagnostic[];
}

export interface ValidateOptions {
  /** The host's tool names, for pipelines' `allowedTools`; the built-in tools by default. */
  toolNames?: readonly string[];
  /** Validates a `*.script.yaml` file; without it, scripted-model files are skipped. */
  loadScript?: (file: string) => Promise<LoadResult<ScriptKeys>>;
}

/**
 * Loads every definition file under `paths` — stage files, pipelines (with their stage files)
 * and, given a loader, scripted-model files — and pi-workflows workflow directories (see
 * `expandDefinitionPaths`), and collects every diagnostic once, sorted by place. A script that
 * loads is checked against its pipeline among those that loaded (see `pipelineOfScript`).
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
  const pipelines = new Map(workflows.pipelines);
  const scripts: ScriptKeys[] = [];
  // One file at a time: pipelines share the loader's stage files and sub-pipelines.
  for (const file of files) {
    const kind = definitionKind(file);
    if (kind === "script" && loadScript) {
      const result = await loadScript(file);
      if (result.ok) scripts.push(result.value);
      diagnostics.push(...(result.ok ? result.warnings : result.diagnostics));
      continue;
    }
    const result =
      kind === "pipeline" ? await loader.pipelineFile(file) : (await loader.stageFile(file)).result;
    if (kind === "pipeline" && result.ok) pipelines.set(file, result.value as PipelineDefinition);
    diagnostics.push(...(result.ok ? result.warnings : result.diagnostics));
  }
  for (const script of scripts) {
    const pipeline = pipelineOfScript(script.file, pipelines);
    if (pipeline) diagnostics.push(...scriptStageDiagnostics(script, pipeline));
  }
  return {
    files: [...files, ...workflows.files],
    diagnostics: uniqueDiagnostics(diagnostics).sort(byPosition),
  };
}

/**
 * The pipeline a script is for, among `pipelines` (by the path they were given as): the one it
 * is named after in its own directory — `<name>.yaml`, `<name>.yml` or the workflow directory
 * `<name>` for `<name>.script.yaml` and `<name>.<variant>.script.yaml`, the longest name
 * winning — or else the only pipeline there is. None: the script is checked on its own.
 */
export function pipelineOfScript(
  script: string,
  pipelines: ReadonlyMap<string, PipelineDefinition>,
): PipelineDefinition | undefined {
  const directory = dirname(resolve(script));
  const name = basename(script);
  let best: { length: number; pipeline: PipelineDefinition } | undefined;
  for (const [path, pipeline] of pipelines) {
    const own = basename(path).replace(/\.ya?ml$/i, "");
    if (dirname(resolve(path)) !== directory || !name.startsWith(`${own}.`)) continue;
    if (best === undefined || own.length > best.length) best = { length: own.length, pipeline };
  }
  if (best) return best.pipeline;
  return pipelines.size === 1 ? [...pipelines.values()][0] : undefined;
}
