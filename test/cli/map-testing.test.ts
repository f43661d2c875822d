import { cpSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, runCli, summaryOf, withoutColour } from "../support/cli.js";
import { tempDir } from "../support/stages.js";

/** A fresh copy of the map-group fixture: review-files.yaml, its stages and its script. */
function mapReview(): { pipeline: string; script: string; dir: string } {
  const dir = tempDir();
  cpSync(join(REPO_ROOT, "test/fixtures/map-review"), dir, { recursive: true });
  return {
    dir,
    pipeline: join(dir, "review-files.yaml"),
    script: join(dir, "review-files.script.yaml"),
  };
}

describe("stagechart paths and test on a pipeline with a map group", () => {
  it("lists paths naming each list length and each item", async () => {
    const { pipeline } = mapReview();
    const { code, stdout } = await runCli("paths", pipeline);
    expect(code).toBe(0);
    const text = withoutColour(stdout);
    expect(text).toContain("(done): list-files: ok: output.files has 0 items → summarize: ok");
    expect(text).toContain(
      "(done): list-files: ok: output.files has 2 items → review-file[0]: ok → review-file[1]: cap-hit → summarize: ok",
    );
  });

  it("drives every path on the real engine, each list handed on and each item scripted", async () => {
    const { pipeline } = mapReview();
    const { code, stdout } = await runCli("test", pipeline, "--json");
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report.failed).toBe(0);
    expect(report.passed).toBeGreaterThan(5);
    expect(report.coverage.transitions.uncovered).toEqual([
      expect.objectContaining({ transition: expect.stringContaining("list refused") }),
    ]);
  });

  it("runs with its scripted model: every item reads the same script", async () => {
    const { pipeline, script, dir } = mapReview();
    const run = await runCli(
      "run",
      pipeline,
      "--task",
      "rename auth",
      "--headless",
      "--json",
      "--model",
      `scripted:${script}`,
      "--root",
      dir,
      "--store",
      join(dir, "runs.db"),
    );
    expect(run.code).toBe(0);
    expect(summaryOf(run.stdout)).toMatchObject({
      status: "done",
      output: { summary: "Both files do what the task asks." },
    });
  });
});
