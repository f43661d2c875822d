import { cpSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { globSync } from "tinyglobby";
import type { Terminal } from "../../src/cli/io.js";
import { main } from "../../src/cli/main.js";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the stagechart command in-process, capturing what it prints. */
export const runCli = (...argv: string[]): Promise<CliRun> => runCliOn({}, ...argv);

/**
 * `runCli`, with stdout a terminal `terminalWidth` wide when that is given, and a person at
 * `terminal` (stdin a terminal) when that is given.
 */
export async function runCliOn(
  on: { terminalWidth?: number; terminal?: Terminal },
  ...argv: string[]
): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const { terminalWidth, terminal } = on;
  const code = await main(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    ...(terminalWidth !== undefined && { terminalWidth: () => terminalWidth }),
    ...(terminal && { terminal }),
  });
  return { code, stdout, stderr };
}

/**
 * The repository: two folders up, or the working directory where these helpers are compiled
 * elsewhere (the benchmarks compile them into node_modules/.cache and run from the repository).
 */
export const REPO_ROOT = existsSync(join(import.meta.dirname, "../../bin/stagechart.js"))
  ? resolve(import.meta.dirname, "../..")
  : process.cwd();

/**
 * A fresh copy of the project the bundled pipelines' scripted models work on (`src/auth.ts` with
 * `export const auth` once), in a new folder under `parent`. It is the tests' own fixture, not
 * `examples/auth-service`: the README's quickstart edits that one in place, and no test may
 * depend on what a run left there.
 */
export function demoProject(parent = tmpdir()): string {
  const dir = mkdtempSync(join(parent, "stagechart-demo-"));
  cpSync(join(REPO_ROOT, "test/fixtures/demo-project"), dir, { recursive: true });
  return dir;
}

/** The store a project's runs go to when the CLI runs inside it. */
export const storeOf = (project: string): string => join(project, ".stagechart/runs.db");

/** Runs the CLI on a project with the project's own store, as a user inside it would. */
export const runIn = (project: string, ...argv: string[]): Promise<CliRun> =>
  runCli(...argv, "--root", project, "--store", storeOf(project));

/** `stagechart run <pipeline> --task <task> …flags` on a project, with the project's own store. */
export const runPipelineIn = (
  project: string,
  pipeline: string,
  task: string,
  ...flags: string[]
): Promise<CliRun> => runIn(project, "run", pipeline, "--task", task, ...flags);

/** Runs a store command (`runs`, `show`, `resume`, …) against a project's store. */
export const storeCommand = (project: string, ...argv: string[]): Promise<CliRun> =>
  runCli(...argv, "--store", storeOf(project));

/** The JSON summary a command prints last on stdout. */
export const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split("\n").at(-1) as string);

const ESC = "\u001b";

/** Text without its colour codes. */
export const withoutColour = (text: string): string =>
  text.replace(new RegExp(`${ESC}\\[[0-9;]*m`, "g"), "");

/** What clears a terminal's line before the live status line is redrawn or replaced. */
export const CLEAR_LINE = `\r${ESC}[2K`;

/**
 * What the documentation says: the README and every page of the docs site, one text. Checks of
 * a quoted figure or example read it here, whichever page the text lives on.
 */
export function documentation(): string {
  const pages = globSync("docs/**/*.md", { cwd: REPO_ROOT, ignore: ["**/.vitepress/**"] });
  return [
    readFileSync(join(REPO_ROOT, "README.md"), "utf8"),
    ...pages.sort().map((page) => readFileSync(join(REPO_ROOT, page), "utf8")),
  ].join("\n\n");
}
