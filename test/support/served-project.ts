import { copyFileSync, cpSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { DECIDING } from "./ask-pipelines.js";
import { demoProject, REPO_ROOT } from "./cli.js";

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
 * A fresh demo project (under `parent`, when given) with a folder of pipelines to serve
 * (`pipelines/`): code-review with its bundled script (whose plan asks for a grant) and
 * `quick.script.yaml` (which asks none), and `deciding`, one ask stage. The tests and the serve
 * benchmark share it, so the bundled stages and pipelines are found from `REPO_ROOT`.
 */
export function servedProject(parent?: string): { root: string; pipelines: string } {
  const root = demoProject(parent);
  const pipelines = join(root, "pipelines");
  mkdirSync(pipelines);
  const stages = join(REPO_ROOT, "stages");
  cpSync(stages, join(root, "stages"), {
    recursive: true,
    filter: (path) => path === stages || (dirname(path) === stages && path.endsWith(".md")),
  });
  for (const file of ["code-review.yaml", "code-review.script.yaml"])
    copyFileSync(join(REPO_ROOT, "machines", file), join(pipelines, file));
  writeFileSync(join(pipelines, "quick.script.yaml"), QUICK_SCRIPT);
  writeFileSync(join(pipelines, "deciding.yaml"), DECIDING);
  writeFileSync(join(pipelines, "deciding.script.yaml"), "stages: {}\n");
  return { root, pipelines };
}
