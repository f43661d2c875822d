import { execFileSync } from "node:child_process";
import { cpSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { MACHINES_DIR, PIPELINE, project } from "../support/pipeline-files.js";
import { STAGES_DIR, seedPlan, tempDir, writeFiles } from "../support/stages.js";

const ROOT = resolve(import.meta.dirname, "../..");

describe("stagechart validate", () => {
  it("exits 0 on the bundled stages with a summary line", async () => {
    const run = await runCli("validate", STAGES_DIR);
    expect(run).toEqual({
      code: 0,
      stdout: "18 files checked: 0 errors, 0 warnings — valid\n",
      stderr: "",
    });
  });

  it("exits 0 on the bundled pipelines, their scripted models and the stages, with no warning: each variant script lists the model stages it stops short of, empty", async () => {
    const run = await runCli("validate", MACHINES_DIR, STAGES_DIR);
    expect(run).toEqual({
      code: 0,
      stdout: "39 files checked: 0 errors, 0 warnings — valid\n",
      stderr: "",
    });
  });

  it("checks a script against the pipeline given with it: a misspelt stage is an error naming the closest one", async () => {
    const dir = tempDir();
    const script = readFileSync(join(MACHINES_DIR, "code-review.script.yaml"), "utf8");
    writeFiles(dir, { "mine.script.yaml": script.replace("\n  review:", "\n  reveiw:") });
    const lineOf = (start: string) => script.split("\n").findIndex((l) => l.startsWith(start)) + 1;
    const file = join(dir, "mine.script.yaml");
    const run = await runCli("validate", file, join(MACHINES_DIR, "code-review.yaml"));
    expect(run.code).toBe(1);
    expect(run.stdout.split("\n")).toEqual([
      `${file}:${lineOf("stages:")}:1 Validation/ScriptStageMissing warning: the script has no entries for review, a model stage of code-review; a run that reaches it fails there with Validation/ScriptStageMissing`,
      `${file}:${lineOf("  review:")}:3 Validation/ScriptStageUnknown script stage reveiw is not a stage of pipeline code-review; did you mean review?`,
      "2 files checked: 1 error, 1 warning — invalid",
      "",
    ]);
  });

  it("checks a script against the pipeline it is named after, among several", async () => {
    const dir = tempDir();
    cpSync(MACHINES_DIR, join(dir, "machines"), { recursive: true });
    cpSync(STAGES_DIR, join(dir, "stages"), { recursive: true });
    const file = join(dir, "machines/code-review.mine.script.yaml");
    writeFiles(join(dir, "machines"), {
      "code-review.mine.script.yaml":
        "stages:\n  plan: [{ text: hi }]\n  execute: [{ text: hi }]\n  reviw: [{ text: hi }]\n",
    });
    const run = await runCli("validate", join(dir, "machines"), "--json");
    expect(JSON.parse(run.stdout).filter((d: { file: string }) => d.file === file)).toEqual([
      expect.objectContaining({
        line: 1,
        severity: "warning",
        code: "Validation/ScriptStageMissing",
      }),
      expect.objectContaining({
        line: 4,
        column: 3,
        code: "Validation/ScriptStageUnknown",
        message: "script stage reviw is not a stage of pipeline code-review; did you mean review?",
      }),
    ]);
  });

  it("checks a pipeline with its stage files, reporting a problem found both ways once", async () => {
    const dir = project({
      "machines/p.yaml": PIPELINE.replace("entry: plan", "entry: plna"),
    });
    writeFiles(join(dir, "stages"), { "plan.md": seedPlan.replace("turnCap: 20", "turnCap: 0") });
    const run = await runCli("validate", join(dir, "machines"), join(dir, "stages"));
    expect(run.code).toBe(1);
    expect(run.stdout.split("\n")).toEqual([
      `${join(dir, "machines/p.yaml")}:5:1 Validation/PipelineEntryUnknown entry "plna" names no stage; the stages are plan, execute, review`,
      `${join(dir, "machines/p.yaml")}:7:11 Validation/PipelineStageInvalid stages.plan: ${join(dir, "stages/plan.md")} did not load; its problems are reported in it`,
      `${join(dir, "stages/plan.md")}:17:1 Validation/StageTurnCapTooLow turnCap must be at least 1`,
      "6 files checked: 3 errors, 0 warnings — invalid",
      "",
    ]);
  });

  it("checks scripted-model files named *.script.yaml", async () => {
    const dir = tempDir();
    writeFiles(dir, { "p.script.yaml": "stages:\n  plan:\n    - { tool: Read, text: hi }\n" });
    const run = await runCli("validate", join(dir, "p.script.yaml"));
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`${join(dir, "p.script.yaml")}:3:21 Validation/ScriptInvalid`);
  });

  it("prints every diagnostic as file:line:col code message and exits 1", async () => {
    const dir = tempDir();
    writeFiles(dir, {
      "plan.md": seedPlan.replace("turnCap: 20", "turnCap: 0"),
      "none.md": "hello",
    });
    const run = await runCli("validate", dir);
    expect(run.code).toBe(1);
    expect(run.stdout.split("\n")).toEqual([
      `${join(dir, "none.md")}:1:1 Validation/StageFrontmatterMissing no YAML frontmatter: a stage file starts with a \`---\` line, its fields, and a closing \`---\` line`,
      `${join(dir, "plan.md")}:17:1 Validation/StageTurnCapTooLow turnCap must be at least 1`,
      "2 files checked: 2 errors, 0 warnings — invalid",
      "",
    ]);
  });

  it("marks warnings and still exits 0 when there are only warnings", async () => {
    const dir = tempDir();
    writeFiles(dir, { "plan.md": seedPlan.slice(0, seedPlan.lastIndexOf("---") + 4) });
    const run = await runCli("validate", join(dir, "plan.md"));
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("Validation/StageBodyEmpty warning: the body is empty");
    expect(run.stdout).toContain("1 file checked: 0 errors, 1 warning — valid");
  });

  it("--json prints the diagnostics array and nothing else", async () => {
    const dir = tempDir();
    writeFiles(dir, { "plan.md": seedPlan.replace("id: plan", "id: Plan") });
    const run = await runCli("validate", dir, "--json");
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual([
      {
        file: join(dir, "plan.md"),
        line: 2,
        column: 1,
        code: "Validation/StageIdInvalid",
        severity: "error",
        message: expect.stringContaining("kebab-case"),
      },
    ]);
    expect(JSON.parse((await runCli("validate", STAGES_DIR, "--json")).stdout)).toEqual([]);
  });

  it("accepts several paths, files and directories mixed", async () => {
    const run = await runCli("validate", join(STAGES_DIR, "plan.md"), STAGES_DIR);
    expect(run.stdout).toContain("19 files checked");
  });

  it("fails when it finds nothing to check", async () => {
    const run = await runCli("validate", tempDir());
    expect(run).toMatchObject({ code: 1, stdout: "no stage or pipeline files found\n" });
  });

  it("reports a missing path as a diagnostic", async () => {
    const run = await runCli("validate", "no/such/stage.md");
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      "no/such/stage.md:1:1 Validation/StageFileUnreadable cannot be read: no such file",
    );
  });

  it("refuses FIFOs named like definitions, given or met in a directory, and exits 1", async () => {
    const dir = tempDir();
    execFileSync("mkfifo", [join(dir, "x.md"), join(dir, "x.yaml")]);
    for (const paths of [[dir], [join(dir, "x.md"), join(dir, "x.yaml")]]) {
      const run = await runCli("validate", ...paths);
      expect(run.code).toBe(1);
      expect(run.stdout.split("\n")).toEqual([
        `${join(dir, "x.md")}:1:1 Validation/StageFileUnreadable is a FIFO (named pipe), not a regular file`,
        `${join(dir, "x.yaml")}:1:1 Validation/StageFileUnreadable is a FIFO (named pipe), not a regular file`,
        "2 files checked: 2 errors, 0 warnings — invalid",
        "",
      ]);
    }
  });

  it("without paths is a usage error (exit 2)", async () => {
    const run = await runCli("validate");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("missing required argument 'paths'");
  });
});

describe("stagechart", () => {
  it("--help lists the commands and exits 0", async () => {
    const run = await runCli("--help");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("Usage: stagechart");
    expect(run.stdout).toContain("validate [options] <paths...>");
    expect((await runCli("help", "validate")).stdout).toContain("--json");
  });

  it("help and help <command> print the usage on stdout and exit 0", async () => {
    const help = await runCli("help");
    expect(help).toMatchObject({ code: 0, stderr: "" });
    expect(help.stdout).toContain("Usage: stagechart [options] [command]");
    const helpRun = await runCli("help", "run");
    expect(helpRun).toMatchObject({ code: 0, stderr: "" });
    expect(helpRun.stdout).toContain("Usage: stagechart run [options] <pipeline>");
    expect((await runCli("help", "nope")).code).toBe(2);
  });

  it("--version prints the package version", async () => {
    const { version } = (await import("../../package.json", { with: { type: "json" } })).default;
    expect(await runCli("--version")).toEqual({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("an unknown command or option is a usage error (exit 2)", async () => {
    expect((await runCli("frobnicate")).code).toBe(2);
    expect((await runCli("validate", STAGES_DIR, "--jsn")).code).toBe(2);
    expect((await runCli()).code).toBe(2);
  });

  it("the installed binary runs (the built bin/stagechart.js)", () => {
    const out = execFileSync(
      process.execPath,
      [join(ROOT, "bin/stagechart.js"), "validate", "machines", "stages"],
      {
        cwd: ROOT,
        encoding: "utf8",
      },
    );
    expect(out).toBe("39 files checked: 0 errors, 0 warnings — valid\n");
  });

  it("reports a directory it cannot list as StageFileUnreadable naming it, checks the rest, and never throws", async () => {
    const dir = tempDir();
    writeFiles(dir, { "a.md": seedPlan });
    // Directories nested past PATH_MAX: listing the deepest fails (ENAMETOOLONG), even as root.
    const segment = "d".repeat(200);
    execFileSync("bash", [
      "-c",
      `cd "$1" && for i in $(seq 25); do mkdir ${segment} && cd ${segment}; done`,
      "bash",
      dir,
    ]);
    const deep = join(dir, ...Array.from({ length: 25 }, () => segment));
    const run = await runCli("validate", dir, "--json");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(1);
    const diagnostics = JSON.parse(run.stdout) as { file: string; code: string; message: string }[];
    const unreadable = diagnostics.filter((d) => d.code === "Validation/StageFileUnreadable");
    expect(unreadable).toHaveLength(1);
    expect(deep.startsWith(unreadable[0]?.file as string)).toBe(true);
    expect(unreadable[0]?.message).toBe("is a directory that cannot be read: ENAMETOOLONG");
    expect(diagnostics.filter((d) => d.code !== "Validation/StageFileUnreadable")).toEqual([]);
    execFileSync("rm", ["-rf", dir]);
  });
});
