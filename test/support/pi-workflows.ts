import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { REPO_ROOT, runCli, summaryOf } from "./cli.js";
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

/**
 * A script for the release workflow whose static-analysis phase calls Bash outside its whitelist
 * (a grant request: the run suspends when nobody answers it), written into `root`; its path.
 */
function writeGrantScript(root: string): string {
  const file = join(root, "release.grant.script.yaml");
  writeFileSync(
    file,
    `stages:
  build:
    - { tool: workflow_step, args: { action: next } }
  static-analysis:
    - { tool: Bash, args: { command: "echo outside the whitelist" } }
    - { tool: workflow_step, args: { action: next } }
  manual-review:
    - { tool: workflow_step, args: { action: next } }
  publish:
    - { tool: workflow_step, args: { action: next } }
`,
  );
  return file;
}

/**
 * `stagechart run <root>/release` on the grant script, headless with `--on-grant suspend`: the
 * run stops at static-analysis's Bash call, waiting for its grant; its id and what it waits for.
 */
export async function releaseSuspendedOnGrant(
  root: string,
  project: string,
  store: string,
): Promise<{ runId: string; waiting: { proposalId: string }[] }> {
  const started = await runCli(
    ...["run", join(root, "release"), "--task", "Ship"],
    ...["--model", `scripted:${writeGrantScript(root)}`, "--root", project, "--store", store],
    ...["--headless", "--on-grant", "suspend", "--json"],
  );
  if (started.code !== 3)
    throw new Error(`not suspended (exit ${started.code}): ${started.stderr}`);
  return summaryOf(started.stdout);
}
