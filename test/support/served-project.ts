import { copyFileSync, cpSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { DECIDING } from "./ask-pipelines.js";
import { demoProject } from "./cli.js";
import { MACHINES_DIR } from "./pipeline-files.js";
import { STAGES_DIR } from "./stages.js";

/** code-review's run without its plan's grant request: plan, execute and review, done. */
export const QUICK_SCRIPT = `stages:
  plan:
    - tool: submit_plan
      args: { summary: Rename auth., steps: ["rename it"] }
  execute:
    - tool: submit_diff
      args: { summary: Renamed., files: [{ path: src/auth.ts, change: modified }] }
  review:
    - tool: submit_review
      args: { approved: true, summary: Fine., findings: [] }
`;

/**
 * A fresh demo project with a folder of pipelines to serve (`pipelines/`): code-review with its
 * bundled script (whose plan asks for a grant) and `quick.script.yaml` (which asks none), and
 * `deciding`, one ask stage.
 */
export function servedProject(): { root: string; pipelines: string } {
  const root = demoProject();
  const pipelines = join(root, "pipelines");
  mkdirSync(pipelines);
  cpSync(STAGES_DIR, join(root, "stages"), {
    recursive: true,
    filter: (path) => path === STAGES_DIR || (dirname(path) === STAGES_DIR && path.endsWith(".md")),
  });
  for (const file of ["code-review.yaml", "code-review.script.yaml"])
    copyFileSync(join(MACHINES_DIR, file), join(pipelines, file));
  writeFileSync(join(pipelines, "quick.script.yaml"), QUICK_SCRIPT);
  writeFileSync(join(pipelines, "deciding.yaml"), DECIDING);
  writeFileSync(join(pipelines, "deciding.script.yaml"), "stages: {}\n");
  return { root, pipelines };
}
