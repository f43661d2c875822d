import { stageIds } from "./translate.js";
import type { WorkflowSet } from "./types.js";

/**
 * Where a run of workflow `rootKey` is, as the pi-workflows status bar shows it:
 * `Release Pipeline > Code Review [2/3] > 🔍 Static Analysis [1/2]` — the root's name,
 * then one part per level, counted 1-based within its own workflow. The levels come from the
 * running phase's stage execution id, `<runId>/<stage>/<visit>/<stage>/<visit>…`, since a
 * subworkflow's stages run nested under its stage: the id spells the path stack.
 */
export function breadcrumb(
  workflows: WorkflowSet,
  rootKey: string,
  runId: string,
  stageExecutionId: string,
): string | undefined {
  const root = workflows.get(rootKey);
  if (!root || !stageExecutionId.startsWith(`${runId}/`)) return undefined;
  const segments = stageExecutionId.slice(runId.length + 1).split("/");
  const parts = [root.name];
  let workflow = root;
  for (let i = 0; i < segments.length; i += 2) {
    const ids = stageIds(workflow.phases);
    const index = ids.indexOf(segments[i] as string);
    const entry = workflow.phases[index];
    if (!entry) return undefined;
    const counter = `[${index + 1}/${ids.length}]`;
    if (entry.kind === "phase") {
      parts.push(`${entry.emoji} ${entry.name} ${counter}`);
      break;
    }
    const child = workflows.get(entry.key);
    if (!child) return undefined;
    parts.push(`${child.name} ${counter}`);
    workflow = child;
  }
  return parts.join(" > ");
}
