import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../support/cli.js";

/** How long each stage's model takes to answer a call, in ms. */
export const STAGE_DELAYS = { plan: 180, execute: 120, test: 260, lint: 140, review: 90 };

/**
 * A copy of code-review-parallel (the same id, so its runs compare with the bundled one's) whose
 * scripted model takes `delays` per call of each stage: its durations are long enough to see.
 */
export function timedPipeline(dir: string, delays: Record<string, number> = STAGE_DELAYS): string {
  const yaml = readFileSync(join(REPO_ROOT, "machines/code-review-parallel.yaml"), "utf8");
  const script = readFileSync(join(REPO_ROOT, "machines/code-review-parallel.script.yaml"), "utf8");
  let stage = "";
  const timed = script.split("\n").map((line) => {
    stage = /^ {2}([a-z]+):$/.exec(line)?.[1] ?? stage;
    const delay = delays[stage];
    return line.startsWith("    - tool:") && delay
      ? `    - delayMs: ${delay}\n      tool:${line.slice("    - tool:".length)}`
      : line;
  });
  writeFileSync(
    join(dir, "timed.yaml"),
    yaml.replaceAll("../stages/", `${join(REPO_ROOT, "stages")}/`),
  );
  writeFileSync(join(dir, "timed.script.yaml"), timed.join("\n"));
  return join(dir, "timed.yaml");
}
