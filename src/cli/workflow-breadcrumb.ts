import { basename, dirname } from "node:path";
import { breadcrumb } from "../definitions/pi-workflows/breadcrumb.js";
import { isWorkflowDirectory, loadWorkflowRoot } from "../definitions/pi-workflows/index.js";
import type { RunView } from "../inspect/run-view.js";
import { foldStatus, NO_STATUS } from "./status.js";

/**
 * The breadcrumb of a run of a pi-workflows directory (`show`), from the phase running now;
 * undefined for another pipeline, or a run with no phase running (ended, or not started).
 */
export async function workflowBreadcrumbOf(run: RunView): Promise<string | undefined> {
  const dir = run.options.pipelineFile;
  if (typeof dir !== "string" || !isWorkflowDirectory(dir)) return undefined;
  const events = run.timeline.filter((e) => e.damaged === undefined);
  const running = events.reduce(foldStatus, NO_STATUS).running.at(-1);
  if (!running) return undefined;
  const root = await loadWorkflowRoot(dirname(dir));
  return breadcrumb(root.kept, basename(dir), run.runId, running.stageExecutionId);
}
