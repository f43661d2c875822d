import { cpSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "./cli.js";

/** A fresh copy of examples/task-app, the project the task-lifecycle scripts work on. */
export function taskProject(): string {
  const dir = mkdtempSync(join(tmpdir(), "stagechart-task-"));
  cpSync(join(REPO_ROOT, "examples/task-app"), dir, { recursive: true });
  return dir;
}
