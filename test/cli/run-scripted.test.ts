import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { demoProject, runPipelineIn, storeCommand, summaryOf } from "../support/cli.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

const CODE_REVIEW_SCRIPT = readFileSync(join(MACHINES_DIR, "code-review.script.yaml"), "utf8");

/** The bundled code-review script changed by `edit`, written into the project. */
function scriptIn(project: string, edit: (text: string) => string): string {
  const file = join(project, "mine.script.yaml");
  writeFileSync(file, edit(CODE_REVIEW_SCRIPT));
  return file;
}

describe("a run on a script that does not fit its pipeline", () => {
  it("is refused before it starts when the script names a stage the pipeline does not have, with validate's message", async () => {
    const project = demoProject();
    const script = scriptIn(project, (text) => text.replace("\n  review:", "\n  reveiw:"));
    const run = await runPipelineIn(
      project,
      "code-review",
      "rename",
      "--headless",
      "--model",
      `scripted:${script}`,
    );
    expect(run).toEqual({
      code: 1,
      stdout: "",
      stderr: `Validation/ScriptStageUnknown: the scripted model ${script} does not fit pipeline code-review: script stage reveiw is not a stage of pipeline code-review; did you mean review?\n`,
    });
    expect(JSON.parse((await storeCommand(project, "runs", "--json")).stdout)).toEqual([]);
  });

  it("fails at the first turn of a stage the script has no entries for, saying so, not at the turn cap", async () => {
    const project = demoProject();
    const script = scriptIn(project, (text) => text.slice(0, text.indexOf("\n  review:") + 1));
    const run = await runPipelineIn(
      project,
      "code-review",
      "rename",
      "--headless",
      "--json",
      "--model",
      `scripted:${script}`,
    );
    expect(run.code).toBe(1);
    const message = `the scripted model ${script} has no entries for stage review of pipeline code-review; its stages are plan, execute`;
    expect(summaryOf(run.stdout)).toMatchObject({
      status: "failed",
      error: { code: "Validation/ScriptStageMissing", message: `stage review failed: ${message}` },
    });
    const audit = await storeCommand(project, "audit", summaryOf(run.stdout).runId, "--json");
    const turns = JSON.parse(audit.stdout).filter(
      (e: { type: string; stageId?: string }) => e.type === "ModelTurn" && e.stageId === "review",
    );
    expect(turns).toHaveLength(1);
    expect(turns[0].payload.error).toMatchObject({
      code: "Validation/ScriptStageMissing",
      message,
    });
  });
});
