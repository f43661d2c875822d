import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { TASK_DIR } from "./artifacts.js";

const STATUS = {
  ok: "completed",
  skip: "skipped",
  retry: "running",
  fail: "failed",
};
/** The task's state after a transition: the stage now running, or `done`; an ended run's last stage. */
export function taskState(notice, phases) {
  const ended = notice.state === "failed" || notice.state === "cancelled";
  const phase = ended ? (notice.previous ?? notice.state) : notice.state;
  const actors = Object.fromEntries(
    phases.map((id) => {
      const result = notice.results[id];
      const running = id === phase && !ended && phase !== "done";
      const status = running
        ? "running"
        : id === phase && ended
          ? notice.state
          : result
            ? STATUS[result.verdict]
            : null;
      return [id, { round: notice.visits[id] ?? 0, status }];
    }),
  );
  return { phase, actors };
}
/** Writes `task/state.json` whole (a rename), so a reader never sees half of it. */
export function writeTaskState(root, state) {
  const path = join(root, TASK_DIR, "state.json");
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}
