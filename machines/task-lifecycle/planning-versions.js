import { cpSync, existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { TASK_DIR } from "./artifacts.js";

const VERSIONS = "versions";
/**
 * The task lifecycle's planning versions: when planning is entered again (a re-plan, or a redo of it),
 * the artifacts the round before left in `task/planning/` are first kept in
 * `task/planning/versions/<that round>/`. A version already kept is never written again, so a
 * notice repeated after a crash cannot overwrite it with the new round's files. Code is not
 * touched: going back to planning changes no file the change made.
 */
export function keepPlanningVersion(notice) {
  const round = notice.visits.planning ?? 0;
  if (notice.state !== "planning" || round < 2) return;
  const planning = join(notice.root, TASK_DIR, "planning");
  const version = join(planning, VERSIONS, String(round - 1));
  if (!existsSync(planning) || existsSync(version)) return;
  const files = readdirSync(planning).filter(
    (name) => name !== VERSIONS && statSync(join(planning, name)).isFile(),
  );
  for (const name of files) cpSync(join(planning, name), join(version, name));
}
