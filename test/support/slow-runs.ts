import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, withoutColour } from "./cli.js";
import { withDelays } from "./delayed-scripts.js";

/**
 * A `stagechart` process and what it printed so far. Its output may be coloured (picocolors
 * colours it under `CI`, as on the CI machine); `printed` looks for text without the colours.
 */
export interface SpawnedCli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once stdout holds `text`. */
  printed(text: string): Promise<void>;
}

/** Runs the built `bin/stagechart.js` with `argv` in `cwd`. */
export function spawnCli(cwd: string, argv: string[]): SpawnedCli {
  const child = spawn(process.execPath, [join(REPO_ROOT, "bin/stagechart.js"), ...argv], {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiting: { text: string; resolve: () => void }[] = [];
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
    const plain = withoutColour(stdout);
    for (const wait of waiting.filter(({ text }) => plain.includes(text))) {
      waiting.splice(waiting.indexOf(wait), 1);
      wait.resolve();
    }
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on("close", (code, signal) => done({ code, signal })),
  );
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    printed: (text) =>
      withoutColour(stdout).includes(text)
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            waiting.push({ text, resolve });
            void exited.then(() =>
              reject(new Error(`exited before printing "${text}": ${stdout}${stderr}`)),
            );
          }),
  };
}

/**
 * `stagechart run code-review` on `project` (a demo project) with its scripted model answering
 * each turn `delayMs` late, the run's steps stored at `store`.
 */
export function slowCodeReview(
  project: string,
  store: string,
  { delayMs, runId }: { delayMs: number; runId: string },
): SpawnedCli {
  const script = join(project, "slow.script.yaml");
  const bundled = readFileSync(join(REPO_ROOT, "machines/code-review.script.yaml"), "utf8");
  writeFileSync(script, withDelays(bundled, delayMs));
  return spawnCli(project, [
    ...["run", join(REPO_ROOT, "machines/code-review.yaml"), "--task", "Rename auth"],
    ...["--run-id", runId, "--root", project, "--store", store, "--model", `scripted:${script}`],
  ]);
}
