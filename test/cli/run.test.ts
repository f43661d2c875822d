import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CLEAR_LINE,
  demoProject,
  REPO_ROOT,
  runCli,
  runCliOn,
  runIn,
  runPipelineIn,
  storeOf,
  summaryOf,
  withoutColour,
} from "../support/cli.js";
import { PIPELINE, project } from "../support/pipeline-files.js";
import { tempDir } from "../support/stages.js";

describe("stagechart run", () => {
  it("runs the bundled code-review pipeline on the scripted model to done", async () => {
    const project = demoProject();
    const run = await runPipelineIn(
      project,
      "code-review",
      "refactor auth module",
      "--headless",
      "--json",
    );
    expect(run.code).toBe(0);
    expect(summaryOf(run.stdout)).toMatchObject({
      status: "done",
      runId: expect.stringMatching(/^run-/),
    });
    expect(run.stderr).toContain("denied (headless: ToolTerminal/NoInteractor)");
    expect(readFileSync(join(project, "src/auth.ts"), "utf8")).toContain(
      "export const authentication",
    );
  });

  it("prints one progress line per event when not on a terminal, and the exit code says how it ended", async () => {
    const run = await runPipelineIn(
      demoProject(),
      "code-review",
      "refactor auth module",
      "--headless",
    );
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^run run-\S+ · code-review$/);
    expect(lines).toContain("plan turn 1 · calls Edit");
    expect(lines.some((l) => /^plan {3}Grep\(auth\) approved \(envelope\)$/.test(l))).toBe(true);
    expect(lines.at(-1)).toMatch(/^run run-\S+ done$/);
    expect(withoutColour(run.stdout)).toBe(run.stdout);
    expect(run.stdout).not.toContain("\r");
  });

  it("adds a live status line on a terminal, redrawn in place and gone at the end", async () => {
    const project = demoProject();
    const run = await runCliOn(
      { terminalWidth: 120 },
      ...["run", "code-review", "--task", "refactor auth module", "--headless"],
      ...["--root", project, "--store", storeOf(project)],
    );
    expect(run.code).toBe(0);
    const plain = withoutColour(run.stdout);
    // Each event line is printed after clearing the status line, which is then drawn again.
    const afterTurn = plain.split(`${CLEAR_LINE}plan turn 1 · calls Edit\n`)[1];
    expect(afterTurn).toMatch(/^\[\d+s\] 0 approved, 0 denied · plan: 1 turn, 0 tool calls/);
    expect(plain).toMatch(/execute: 1 turn, 1 tool call/);
    const shown = plain.split("\n").map((line) => line.split(CLEAR_LINE).at(-1));
    expect(shown.at(-2)).toMatch(/^run run-\S+ done$/);
    expect(shown.at(-1)).toBe("");
  });

  it("runs the parallel pipeline: Plan → Execute → [Test, Lint] → Review", async () => {
    const run = await runPipelineIn(
      demoProject(),
      "code-review-parallel",
      "refactor auth module",
      "--headless",
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("(parallel)");
    expect(run.stdout).toContain("(join)");
  });

  it("takes --run-id and --set, and refuses a ctx the pipeline's schema rejects", async () => {
    const project = demoProject();
    const ok = await runPipelineIn(
      project,
      "code-review",
      "t",
      "--set",
      "ticket=42",
      "--run-id",
      "r-fixed",
      "--headless",
      "--json",
    );
    expect(summaryOf(ok.stdout)).toMatchObject({ runId: "r-fixed", status: "done" });
    const missingTask = await runIn(project, "run", "code-review", "--headless", "--json");
    expect(missingTask.code).toBe(1);
    expect(summaryOf(missingTask.stdout)).toMatchObject({
      status: "failed",
      error: { code: "Validation/RunContextInvalid" },
    });
    const badSet = await runPipelineIn(demoProject(), "code-review", "t", "--set", "novalue");
    expect(badSet.code).toBe(2);
  });

  it("refuses a --root that does not exist or is a file, naming it, before any store is made", async () => {
    const dir = tempDir();
    const file = join(dir, "notes.txt");
    writeFileSync(file, "not a directory");
    for (const root of [join(dir, "gone"), file]) {
      const store = join(dir, "runs.db");
      const run = await runCli(
        ...["run", "code-review", "--task", "t", "--headless", "--json"],
        ...["--root", root, "--store", store],
      );
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^Validation\/RootInvalid: /);
      expect(run.stderr).toContain(root);
      expect(summaryOf(run.stdout)).toMatchObject({
        status: "failed",
        error: { code: "Validation/RootInvalid", context: { root } },
      });
      expect(existsSync(store)).toBe(false);
    }
  });

  it("explains a missing pipeline, a broken model spec, and an unsupported one", async () => {
    const missing = await runPipelineIn(demoProject(), "no-such-pipeline", "t");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      'Validation/PipelineNotFound: there is no file no-such-pipeline and no bundled pipeline named "no-such-pipeline" (bundled: arena-debate, code-review, code-review-parallel, task-lifecycle)\n',
    );
    const missingFile = await runPipelineIn(demoProject(), "nowhere/p.yaml", "t", "--json");
    expect(summaryOf(missingFile.stdout).error.message).toBe("there is no file nowhere/p.yaml");
    const script = await runPipelineIn(
      demoProject(),
      "code-review",
      "t",
      "--model",
      "scripted:nowhere.script.yaml",
      "--json",
    );
    expect(script.code).toBe(1);
    expect(summaryOf(script.stdout).error.code).toBe("Validation/ScriptInvalid");
    const hosted = await runPipelineIn(demoProject(), "code-review", "t", "--model", "gpt:4");
    expect(hosted.stderr).toContain("Validation/ModelSpecUnsupported");
  });

  it("refuses a FIFO given as the pipeline, or as one of its stage files, instead of waiting on it", async () => {
    const dir = project({ "machines/p.yaml": PIPELINE });
    rmSync(join(dir, "stages/plan.md"));
    execFileSync("mkfifo", [join(dir, "machines/fifo.yaml"), join(dir, "stages/plan.md")]);
    for (const pipeline of ["machines/fifo.yaml", "machines/p.yaml"]) {
      const run = await runCli("run", join(dir, pipeline), "--task", "t", "--model", "scripted:x");
      expect(run.code, pipeline).toBe(1);
      expect(run.stderr, pipeline).toContain("is a FIFO (named pipe), not a regular file");
    }
  });

  it("runs a stage whose completionSchema declares draft-07, checking the payload by it", async () => {
    const dir = project({
      "machines/one.yaml":
        "id: one\ncontext: { type: object, properties: { task: { type: string } } }\nentry: plan\nstages:\n  plan: { file: ../stages/plan.md }\n",
      "machines/one.script.yaml":
        "stages:\n  plan:\n    - { tool: submit_plan, args: { summary: s } }\n    - { tool: submit_plan, args: { summary: s, steps: [a] } }\n",
    });
    const plan = join(dir, "stages/plan.md");
    writeFileSync(
      plan,
      readFileSync(plan, "utf8").replace(
        "completionSchema:\n",
        'completionSchema:\n  $schema: "http://json-schema.org/draft-07/schema#"\n',
      ),
    );
    const run = await runIn(dir, "run", join(dir, "machines/one.yaml"), "--task", "t");
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("plan   completion rejected (schema)");
    expect(run.stdout).toContain("submit_plan accepted");
  });

  it.each(["openai:", "anthropic:", "openai: "])(
    "says what --model %j leaves out",
    async (spec) => {
      const run = await runPipelineIn(demoProject(), "code-review", "t", "--model", spec, "--json");
      expect(run.code).toBe(1);
      expect(summaryOf(run.stdout).error).toMatchObject({
        code: "Validation/ModelSpecInvalid",
        message: expect.stringContaining("names no model"),
      });
    },
  );

  it("says there is no --model and no script beside a pipeline that has none", async () => {
    const dir = project({ "machines/mine.yaml": PIPELINE });
    const run = await runIn(
      demoProject(),
      "run",
      join(dir, "machines/mine.yaml"),
      "--task",
      "t",
      "--json",
    );
    expect(run.code).toBe(1);
    const { error } = summaryOf(run.stdout);
    expect(error.code).toBe("Validation/ModelSpecMissing");
    expect(error.message).toContain("no --model was given");
    expect(error.message).toContain("no mine.script.yaml beside the pipeline");
    expect(error.message).toContain("openai-compatible:<baseURL>#<model>");
    expect(run.stderr).not.toContain("ScriptInvalid");
  });

  it("exits 1 with status failed when the run fails", async () => {
    const script = join(tempDir(), "failing.script.yaml");
    writeFileSync(script, 'stages:\n  plan:\n    - { error: "bad request", status: 400 }\n');
    const run = await runPipelineIn(
      demoProject(),
      "code-review",
      "t",
      "--model",
      `scripted:${script}`,
      "--headless",
      "--json",
    );
    expect(run.code).toBe(1);
    expect(summaryOf(run.stdout)).toMatchObject({
      status: "failed",
      error: { code: "ExtensionHost/ProviderRejected" },
    });
  });

  it("works as the installed binary, storing the run in .stagechart/runs.db of its working directory", () => {
    const project = demoProject();
    const out = execFileSync(
      process.execPath,
      [
        join(REPO_ROOT, "bin/stagechart.js"),
        "run",
        "code-review",
        "--task",
        "refactor auth module",
        "--headless",
        "--json",
      ],
      { cwd: project, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
    );
    expect(summaryOf(out).status).toBe("done");
    expect(existsSync(join(project, ".stagechart/runs.db"))).toBe(true);
  });
});

describe("stagechart graph", () => {
  it("draws the parallel pipeline in Mermaid, its group the one state it runs as", async () => {
    const run = await runCli("graph", "code-review-parallel", "--format", "mermaid");
    expect(run.code).toBe(0);
    const lines = run.stdout.split("\n");
    expect(lines[0]).toBe("stateDiagram-v2");
    expect(lines).toContain(
      '  state "execute_parallel ∥ test, lint (fail-fast)" as s_code_review_parallel_execute_parallel',
    );
    expect(run.stdout).toContain(
      "s_code_review_parallel_execute_parallel --> s_code_review_parallel_review : fail-fast policy met",
    );
  });

  it("draws DOT and JSON from the same compiled machine", async () => {
    const dot = await runCli("graph", "code-review-parallel", "--format", "dot");
    expect(dot.stdout).toContain(
      '"code-review-parallel.execute_parallel" [label="execute_parallel ∥ test, lint (fail-fast)"];',
    );
    const json = JSON.parse((await runCli("graph", "code-review", "--format", "json")).stdout);
    expect(json.id).toBe("code-review");
    expect(json.children.map((c: { id: string }) => c.id)).toContain("code-review.plan");
  });

  it("refuses an unknown format", async () => {
    expect((await runCli("graph", "code-review", "--format", "png")).code).toBe(2);
  });
});
