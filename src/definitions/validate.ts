import { byPosition, type Diagnostic } from "./diagnostics.js";
import { expandDefinitionPaths, loadStageFile } from "./files.js";

export interface ValidationReport {
  files: string[];
  diagnostics: Diagnostic[];
}

/** Loads every definition file under `paths` and collects every diagnostic, sorted by place. */
export async function validatePaths(paths: readonly string[]): Promise<ValidationReport> {
  const files = await expandDefinitionPaths(paths);
  const results = await Promise.all(files.map(loadStageFile));
  const diagnostics = results.flatMap((r) => (r.ok ? r.warnings : r.diagnostics));
  return { files, diagnostics: diagnostics.sort(byPosition) };
}
