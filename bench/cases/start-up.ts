import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { quartilesOf, spreadOf } from "../interleaved.js";
import { type Comparison, compare } from "../report.js";

/** Rounds of the three commands; each round runs all three, in an order that turns round by round. */
const ROUNDS = 21;

/**
 * The CLI's start-up against `node -e 0`: `--version`, and `validate` of the bundled machines
 * and stages, the built binary. The three commands alternate, so each round's ratios compare
 * processes started under the same load (timed in blocks of seven, `node -e 0` first, the
 * machine's load moved them apart); each row is the median of its rounds' ratios. Undefined when
 * not built.
 */
export function startUp(): Comparison[] | undefined {
  const bin = join(process.cwd(), "bin", "stagechart.js");
  if (!existsSync(join(process.cwd(), "dist", "cli", "main.js"))) return undefined;
  const commands = {
    bare: ["-e", "0"],
    version: [bin, "--version"],
    validate: [bin, "validate", "machines/", "stages/"],
  };
  const names = Object.keys(commands) as (keyof typeof commands)[];
  const times = { bare: [] as number[], version: [] as number[], validate: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = [...names.slice(round % 3), ...names.slice(0, round % 3)];
    for (const name of order) times[name].push(elapsedMs(commands[name]));
  }
  const row = (name: "version" | "validate", title: string, label: string, goalRatio: number) => {
    const ratios = spreadOf(times[name].map((ms, round) => ms / (times.bare[round] ?? Number.NaN)));
    const compared = compare(
      title,
      "ms",
      { label: "node -e 0", value: spreadOf(times.bare).median },
      { label, value: spreadOf(times[name]).median },
      {
        goalRatio,
        rounds: ROUNDS,
        ratioQuartiles: quartilesOf(ratios),
      },
    );
    return { ...compared, ratio: ratios.median };
  };
  return [
    row("version", "start-up: stagechart --version", "--version", 2),
    row("validate", "start-up: stagechart validate machines/ stages/", "validate", 2.5),
  ];
}

/** Wall time of one `node <args>` process started from the project's root. */
export function elapsedMs(args: string[]): number {
  const start = performance.now();
  const child = spawnSync(process.execPath, args, { cwd: process.cwd(), stdio: "ignore" });
  if (child.status !== 0) throw new Error(`node ${args.join(" ")} exited ${child.status}`);
  return performance.now() - start;
}
