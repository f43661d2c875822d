import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { TASK_DIR } from "./artifacts.js";
/**
 * Records the last decision taken at accept in `task/accept/decision.json` (written whole, by a
 * rename), the artifact the seed names, whenever the run is past accept: a resume's first notice
 * may already be past it, and a repeated notice writes the same file again.
 */
export function writeDecision(notice) {
  const answer = notice.results.accept?.output;
  if (notice.state === "accept" || answer === undefined) return;
  const path = join(notice.root, TASK_DIR, "accept/decision.json");
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, `${JSON.stringify(answer, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}
