import { type Dirent, existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { WORKFLOW_FILE } from "./types.js";

/** Whether `path` is a pi-workflows workflow directory: one holding `workflow.yaml`. */
export function isWorkflowDirectory(path: string): boolean {
  return isDirectory(path) && hasWorkflowFile(path);
}

/** Whether the directory `path` holds `workflow.yaml`. */
export const hasWorkflowFile = (path: string): boolean => existsSync(join(path, WORKFLOW_FILE));

/** The keys of a workflows root: its workflow directories' names, sorted; none if it cannot be read. */
export function workflowKeys(root: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch {
    return [];
  }
  return workflowKeysAmong(root, entries);
}

/** The keys of a workflows root from its listing (`entries`, read with their file types). */
export function workflowKeysAmong(root: string, entries: readonly Dirent[]): string[] {
  return entries
    .filter((entry) => entry.isDirectory() && hasWorkflowFile(join(root, entry.name)))
    .map((entry) => entry.name)
    .sort();
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
