import { basename, dirname, join, resolve } from "node:path";
import { DIAGNOSTIC_CODES, type Diagnostic, diagnostic, START } from "../diagnostics.js";
import type { PipelineDefinition } from "../pipeline-types.js";
import {
  loadWorkflowRoot,
  pipelineOf,
  type WorkflowRoot,
  type WorkflowSession,
  workflowSession,
} from "./load.js";
import type { WorkflowDefinition } from "./types.js";
import { WORKFLOW_FILE } from "./types.js";

/**
 * `stagechart validate` on workflow directories: each is loaded with its workflows root, checked
 * as a pipeline, and reported with the problems of every workflow it uses. A subworkflow-only
 * workflow (`show: workflows`) is valid here; only running it on its own is refused.
 */
export async function validateWorkflows(
  dirs: readonly string[],
  toolNames: readonly string[],
): Promise<{
  files: string[];
  diagnostics: Diagnostic[];
  /** The workflows that loaded, by their directory as given. */
  pipelines: Map<string, PipelineDefinition>;
}> {
  const roots = new Map<string, { root: WorkflowRoot; session: WorkflowSession }>();
  const pipelines = new Map<string, PipelineDefinition>();
  const files: string[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const dir of dirs) {
    const rootDir = dirname(resolve(dir));
    let loadedRoot = roots.get(rootDir);
    if (!loadedRoot) {
      loadedRoot = { root: await loadWorkflowRoot(rootDir), session: workflowSession(toolNames) };
      roots.set(rootDir, loadedRoot);
      diagnostics.push(...duplicateCommandNames([...loadedRoot.root.kept.values()]));
    }
    const { root, session } = loadedRoot;
    const key = basename(resolve(dir));
    // Each workflow is translated and built once for the root, whatever number of the
    // pipelines checked use it: the result, problems included, is the same for each.
    const loaded = await pipelineOf(root, key, toolNames, session);
    diagnostics.push(...(loaded.ok ? loaded.warnings : loaded.diagnostics));
    if (loaded.ok) pipelines.set(dir, loaded.value);
    files.push(join(dir, WORKFLOW_FILE), ...phaseFiles(root.kept.get(key)));
  }
  return { files, diagnostics, pipelines };
}

const phaseFiles = (workflow: WorkflowDefinition | undefined): string[] =>
  workflow?.phases.flatMap((phase) => (phase.kind === "phase" ? [phase.file] : [])) ?? [];

/** A command name used twice in one root is a warning: the first workflow (by key) wins. */
function duplicateCommandNames(workflows: readonly WorkflowDefinition[]): Diagnostic[] {
  const first = new Map<string, string>();
  return workflows.flatMap((workflow) => {
    const name = workflow.commandName;
    if (name === undefined) return [];
    const owner = first.get(name);
    if (owner === undefined) {
      first.set(name, workflow.key);
      return [];
    }
    return [
      diagnostic(
        workflow.file,
        START,
        DIAGNOSTIC_CODES.workflowCommandDuplicate,
        `commandName "${name}" is also the command of workflow "${owner}", which wins`,
        "warning",
      ),
    ];
  });
}
