import { spawnSync } from "node:child_process";
import { expect } from "vitest";
import { REPO_ROOT } from "./cli.js";

/**
 * What an ES module script prints, run by a Node process of its own from the repository's root:
 * its own modules, zod settings and locale (`env` is added to this process's). Scripts import
 * `./dist/…`, which needs `npm run build`.
 */
export function printedBy(script: string, env: NodeJS.ProcessEnv = {}): string {
  const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    encoding: "utf8",
  });
  expect(child.status, child.stderr).toBe(0);
  return child.stdout.trim();
}
