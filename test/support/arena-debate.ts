import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { REPO_ROOT, runCli, storeOf } from "./cli.js";

/** An empty workspace for the arena-debate scripts, whose tasks write under config/. */
export const arenaWorkspace = (): string => mkdtempSync(join(tmpdir(), "stagechart-arena-"));

export const ARENA_TASK = "add a retry setting to the service configuration";

export const arenaScript = (name: string): string =>
  `scripted:${join(REPO_ROOT, "machines", `arena-debate.${name}.script.yaml`)}`;

/** `stagechart run arena-debate` on a workspace and its store, headless, in yolo mode, with --json. */
export const runArena = (workspace: string, ...extra: string[]) =>
  runCli(
    ...["run", "arena-debate", "--task", ARENA_TASK, "--root", workspace],
    ...["--store", storeOf(workspace), "--mode", "yolo", "--headless", "--json"],
    ...extra,
  );

/** The run's transitions as `from->to`, from its audit log. */
export async function transitionsOf(workspace: string, runId: string): Promise<string[]> {
  const audit = await runCli("audit", runId, "--store", storeOf(workspace), "--json");
  return (JSON.parse(audit.stdout) as { type: string; payload: { from: string; to: string } }[])
    .filter((e) => e.type === "SMTransition")
    .map((e) => `${e.payload.from}->${e.payload.to}`);
}

/**
 * A copy of the main script in a temp file with `changes` made to its stages (a new plan, a
 * self-heal stage), for runs that take the sandbox's other paths.
 */
export function arenaScriptVariant(changes: Record<string, unknown[]>): string {
  const main = parse(readFileSync(join(REPO_ROOT, "machines/arena-debate.script.yaml"), "utf8"));
  const file = join(mkdtempSync(join(tmpdir(), "stagechart-arena-script-")), "variant.script.yaml");
  writeFileSync(file, stringify({ stages: { ...main.stages, ...changes } }));
  return `scripted:${file}`;
}

/** A plan of shell tasks, as the plan stage's scripted turn submits it. */
export const planTurn = (tasks: { name: string; run: string; rollback?: string }[]) => [
  { tool: "submit_plan", args: { summary: "a plan", tasks } },
];
