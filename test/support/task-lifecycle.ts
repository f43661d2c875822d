import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { REPO_ROOT } from "./cli.js";

/** A fresh copy of examples/task-app, the project the task-lifecycle scripts work on. */
export function taskProject(): string {
  const dir = mkdtempSync(join(tmpdir(), "stagechart-task-"));
  cpSync(join(REPO_ROOT, "examples/task-app"), dir, { recursive: true });
  return dir;
}

/**
 * The straight task-lifecycle script, written into `project`, with a pause of `delayMs` before
 * the model's reply to the `entry`-th call (from 0) of `stage`: a window to kill the run in.
 */
export function pausingScript(
  project: string,
  pauses: { stage: string; entry: number; delayMs: number }[],
): string {
  const lines = readFileSync(join(REPO_ROOT, "machines/task-lifecycle.script.yaml"), "utf8").split(
    "\n",
  );
  let stage = "";
  let entry = -1;
  const paused = lines.map((line) => {
    const key = /^ {2}([a-z-]+):$/.exec(line);
    if (key) {
      stage = key[1] as string;
      entry = -1;
    }
    if (!line.startsWith("    - tool: ")) return line;
    entry += 1;
    const pause = pauses.find((p) => p.stage === stage && p.entry === entry);
    return pause ? `${line}\n      delayMs: ${pause.delayMs}` : line;
  });
  const file = join(project, "pausing.script.yaml");
  writeFileSync(file, paused.join("\n"));
  return file;
}

const BIN = resolve(REPO_ROOT, "bin/stagechart.js");

/**
 * Runs the built CLI (`npm run build` first; a run it stored resumes only in the same build) and,
 * given `killAt`, kills it with SIGKILL as soon as a progress line on stderr matches. Resolves,
 * once the process is gone, with its exit code, stdout and the progress lines seen.
 */
export function runBuilt(
  argv: string[],
  killAt?: RegExp,
): Promise<{ code: number | null; stdout: string; lines: string[] }> {
  const child = spawn(process.execPath, [BIN, ...argv], { stdio: ["ignore", "pipe", "pipe"] });
  const lines: string[] = [];
  let stdout = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  createInterface({ input: child.stderr }).on("line", (line) => {
    lines.push(line);
    if (killAt?.test(line)) child.kill("SIGKILL");
  });
  return new Promise((done) => child.on("close", (code) => done({ code, stdout, lines })));
}
