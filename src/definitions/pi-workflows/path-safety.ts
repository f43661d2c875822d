import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";

/**
 * Where a phase path leads, if it stays inside the workflows root: both are
 * canonicalised (links followed; a missing file keeps its written path), and the target must be
 * strictly below the root — not the root itself, not beside it, not elsewhere.
 */
export function phasePathInside(
  root: string,
  workflowDir: string,
  phase: string,
): string | undefined {
  const canonicalRoot = canonical(resolve(root));
  const target = canonical(resolve(workflowDir, phase));
  const fromRoot = relative(canonicalRoot, target);
  if (fromRoot === "" || fromRoot.startsWith("..") || isAbsolute(fromRoot)) return undefined;
  return target;
}

function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
