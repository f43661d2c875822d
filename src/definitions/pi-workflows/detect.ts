import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { WORKFLOW_FILE } from "./types.js";

/** Whether `path` is a pi-workflows workflow directory: one holding `workflow.yaml`. */
export function isWorkflowDirectory(path: string): boolean {
  return isDirectory(path) && existsSync(join(path, WORKFLOW_FILE));
}

/** The keys of a workflows root: its workflow directories' names, sorted; none if it cannot be read. */
export function workflowKeys(root: string): string[] {
  try {
    return readdirSync(root, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && existsSync(join(root, entry.name, WORKFLOW_FILE)))
      .map((entry) => entry.name)
      .sort();
  } catch {
    return [];
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
