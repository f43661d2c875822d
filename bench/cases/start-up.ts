import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { type Comparison, compare } from "../report.js";

const SAMPLES = 7;

/**
 * The CLI's start-up against `node -e 0`: `--version`, and `validate` of the bundled machines
 * and stages, each the median of a few runs of the built binary. Undefined when not built.
 */
export function startUp(): Comparison[] | undefined {
  const bin = join(process.cwd(), "bin", "stagechart.js");
  if (!existsSync(join(process.cwd(), "dist", "cli", "main.js"))) return undefined;
  const bare = medianMs(["-e", "0"]);
  const version = medianMs([bin, "--version"]);
  const validate = medianMs([bin, "validate", "machines/", "stages/"]);
  return [
    compare(
      "start-up: stagechart --version",
      "ms",
      { label: "node -e 0", value: bare },
      { label: "--version", value: version },
      { goalRatio: 2 },
    ),
    compare(
      "start-up: stagechart validate machines/ stages/",
      "ms",
      { label: "node -e 0", value: bare },
      { label: "validate", value: validate },
      { goalRatio: 3 },
    ),
  ];
}

function medianMs(args: string[]): number {
  const times = Array.from({ length: SAMPLES }, () => {
    const start = performance.now();
    const child = spawnSync(process.execPath, args, { cwd: process.cwd(), stdio: "ignore" });
    if (child.status !== 0) throw new Error(`node ${args.join(" ")} exited ${child.status}`);
    return performance.now() - start;
  }).sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}
