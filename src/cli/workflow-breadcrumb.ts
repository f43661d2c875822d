import { basename, dirname } from "node:path";
import { breadcrumb } from "../definitions/pi-workflows/breadcrumb.js";
import { isWorkflowDirectory, loadWorkflowRoot } from "../definitions/pi-workflows/index.js";
import type { AuditEvent } from "../events/audit.js";
import type { RunView } from "../inspect/run-view.js";

/**
 * The breadcrumb of a run of a pi-workflows directory (`show`), from the phase running now;
 * undefined for another pipeline, or a run with no phase running (ended, or not started).
 */
export async function workflowBreadcrumbOf(run: RunView): Promise<string | undefined> {
  const dir = run.options.pipelineFile;
  if (typeof dir !== "string" || !isWorkflowDirectory(dir)) return undefined;
  const phase = openPhase(run.timeline);
  if (!phase) return undefined;
  const root = await loadWorkflowRoot(dirname(dir));
  return breadcrumb(root.kept, basename(dir), run.runId, phase);
}

const ENDED = new Set(["RunCompleted", "RunFailed", "RunCancelled"]);

/**
 * The stage execution set up last and not exited: the phase a run is in, also when it is
 * suspended in it or was killed in it; none once the run has ended.
 */
function openPhase(events: readonly AuditEvent[]): string | undefined {
  const open: string[] = [];
  for (const event of events) {
    const id = event.stageExecutionId;
    if (ENDED.has(event.type)) open.length = 0;
    if (id === undefined) continue;
    if (event.type === "StageSetup") open.push(id);
    if (event.type === "StageExited" || event.type === "StageCancelled") {
      const at = open.indexOf(id);
      if (at >= 0) open.splice(at, 1);
    }
  }
  return open.at(-1);
}
