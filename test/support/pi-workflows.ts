import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { REPO_ROOT } from "./cli.js";
import { tempDir } from "./stages.js";

/** A fresh copy of the bundled workflows root `machines/pi-release/` (release + code-review). */
export function releaseRoot(): string {
  const dir = join(tempDir(), "workflows");
  cpSync(join(REPO_ROOT, "machines/pi-release"), dir, { recursive: true });
  return dir;
}

/** Writes files under `dir`, making their directories. */
export function putFiles(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
}

/** A phase file. */
export const phase = (id: string, extra = "", body = `Do the ${id} part.`): string =>
  `---\nid: ${id}\nname: ${id} phase\nemoji: "✅"\n${extra}---\n${body}\n`;

/** A subworkflow-only workflow.yaml over `phases` (file names or `{subworkflow: key}`). */
export const hiddenWorkflow = (
  name: string,
  phases: (string | { subworkflow: string })[],
): string => `name: ${name}\nshow: workflows\nphases: ${JSON.stringify(phases)}\n`;
