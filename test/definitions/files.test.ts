import { execFileSync } from "node:child_process";
import { appendFileSync, cpSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  definitionKind,
  diagnostic,
  expandDefinitionPaths,
  loadPipelineFile,
  loadStageFile,
  MAX_DEFINITION_BYTES,
  validatePaths,
} from "../../src/definitions/index.js";
import { loadScriptFile } from "../../src/models/script-file.js";
import { MACHINES_DIR, PIPELINE, placeOf, project } from "../support/pipeline-files.js";
import { STAGES_DIR, seedPlan, tempDir, writeFiles } from "../support/stages.js";

async function codeOf(name: string, content: string | Uint8Array): Promise<string | undefined> {
  const dir = tempDir();
  writeFiles(dir, { [name]: content });
  const result = await loadStageFile(join(dir, name));
  return result.ok ? undefined : result.diagnostics[0]?.code;
}

describe("stage files on disk", () => {
  it("the bundled stages all load", async () => {
    for (const name of ["plan", "execute", "review"]) {
      const result = await loadStageFile(join(STAGES_DIR, `${name}.md`));
      expect(result.ok, name).toBe(true);
      if (result.ok) expect(result.warnings).toEqual([]);
    }
  });

  it("the bundled stages match the code-review pipeline", async () => {
    const load = async (name: string) => {
      const result = await loadStageFile(join(STAGES_DIR, `${name}.md`));
      if (!result.ok) throw new Error(name);
      return result.value;
    };
    expect(await load("plan")).toMatchObject({
      allowedTools: ["Read", "Grep", "Glob"],
      completionTool: "submit_plan",
      turnCap: 20,
    });
    expect(await load("execute")).toMatchObject({
      allowedTools: ["Read", "Grep", "Glob", "Edit", "Write"],
      completionTool: "submit_diff",
      turnCap: 40,
    });
    expect(await load("review")).toMatchObject({
      allowedTools: [],
      completionTool: "submit_review",
      turnCap: 10,
    });
  });

  it.each([
    ["a missing file", "absent.md", null, "Validation/StageFileUnreadable"],
    ["a file that is not Markdown", "plan.txt", seedPlan, "Validation/StageFileNotMarkdown"],
    ["an empty file", "empty.md", "", "Validation/StageFileEmpty"],
    ["a file of blank lines", "blank.md", "\n \n\t\n", "Validation/StageFileEmpty"],
    [
      "a binary file",
      "image.md",
      new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0x1a]),
      "Validation/StageFileBinary",
    ],
    [
      "a file that is not UTF-8",
      "latin1.md",
      new Uint8Array([0x2d, 0x2d, 0x2d, 0x0a, 0xe9, 0xe8]),
      "Validation/StageFileBinary",
    ],
    [
      "a huge file",
      "huge.md",
      `${seedPlan}${"x".repeat(MAX_DEFINITION_BYTES)}`,
      "Validation/StageFileTooLarge",
    ],
    [
      "a file without frontmatter",
      "prompt.md",
      "Just a prompt\n",
      "Validation/StageFrontmatterMissing",
    ],
  ])("%s gets a diagnostic, not an exception", async (_what, name, content, code) => {
    if (content === null) {
      const result = await loadStageFile(join(tempDir(), name));
      expect(result.ok ? undefined : result.diagnostics[0]?.code).toBe(code);
      return;
    }
    expect(await codeOf(name, content)).toBe(code);
  });

  it("a directory named like a stage file gets a diagnostic", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "odd.md"));
    const result = await loadStageFile(join(dir, "odd.md"));
    expect(result.ok ? undefined : result.diagnostics[0]).toMatchObject({
      code: "Validation/StageFileUnreadable",
      message: "is a directory, not a stage file",
    });
  });

  it("a FIFO named like a stage or pipeline file is refused at once, never opened for a writer that never comes", async () => {
    const dir = tempDir();
    execFileSync("mkfifo", [join(dir, "x.md"), join(dir, "x.yaml")]);
    const refusal = {
      code: "Validation/StageFileUnreadable",
      message: "is a FIFO (named pipe), not a regular file",
    };
    expect(await loadStageFile(join(dir, "x.md"))).toEqual({
      ok: false,
      diagnostics: [expect.objectContaining(refusal)],
    });
    expect(await loadPipelineFile(join(dir, "x.yaml"))).toEqual({
      ok: false,
      diagnostics: [expect.objectContaining(refusal)],
    });
  });

  it("a character device named like a stage file is refused", async () => {
    const dir = tempDir();
    symlinkSync("/dev/zero", join(dir, "zero.md"));
    const result = await loadStageFile(join(dir, "zero.md"));
    expect(result.ok ? undefined : result.diagnostics[0]).toMatchObject({
      code: "Validation/StageFileUnreadable",
      message: "is a character device, not a regular file",
    });
  });

  it("a directory walk reports special files named like definitions instead of reading them", async () => {
    const dir = tempDir();
    writeFiles(dir, { "a.md": seedPlan });
    execFileSync("mkfifo", [join(dir, "x.md"), join(dir, "x.yaml")]);
    const report = await validatePaths([dir]);
    expect(report.files).toEqual([join(dir, "a.md"), join(dir, "x.md"), join(dir, "x.yaml")]);
    expect(report.diagnostics.map((d) => [d.file.slice(dir.length + 1), d.code])).toEqual([
      ["x.md", "Validation/StageFileUnreadable"],
      ["x.yaml", "Validation/StageFileUnreadable"],
    ]);
  });

  it("directories expand to every *.md, *.yaml and *.yml below them (links to files too), sorted, skipping READMEs and node_modules", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "nested"));
    mkdirSync(join(dir, "node_modules"));
    writeFiles(dir, {
      "b.md": seedPlan,
      "a.md": seedPlan,
      "README.md": "# Stages",
      "notes.txt": "x",
      "flow.yaml": "id: flow",
      "flow.script.yml": "stages: {}",
      "nested/c.md": seedPlan,
      "node_modules/d.md": seedPlan,
    });
    symlinkSync(join(dir, "a.md"), join(dir, "link.md"));
    expect(await expandDefinitionPaths([dir])).toEqual({
      files: [
        join(dir, "a.md"),
        join(dir, "b.md"),
        join(dir, "flow.script.yml"),
        join(dir, "flow.yaml"),
        join(dir, "link.md"),
        join(dir, "nested/c.md"),
      ],
      workflows: [],
      diagnostics: [],
    });
  });

  it("directories are walked in UTF-16 code-unit order, whatever the machine's locale", async () => {
    const dir = tempDir();
    writeFiles(dir, { "b.md": seedPlan, "B.md": seedPlan, "a.md": seedPlan, "_x.md": seedPlan });
    expect((await expandDefinitionPaths([dir])).files).toEqual(
      ["B.md", "_x.md", "a.md", "b.md"].map((name) => join(dir, name)),
    );
  });

  it("a *.script.yaml file is a scripted model, any other YAML a pipeline, anything else a stage", () => {
    expect(
      ["a.md", "m/p.yaml", "p.YML", "m/p.script.yaml", "p.script.yml", "p.txt"].map(definitionKind),
    ).toEqual(["stage", "pipeline", "pipeline", "script", "script", "stage"]);
  });

  it("validatePaths gathers every diagnostic of every file, in file and line order", async () => {
    const dir = tempDir();
    writeFiles(dir, {
      "good.md": seedPlan,
      "bad.md": seedPlan.replace("turnCap: 20", "turnCap: 0").replace("id: plan", "id: Plan"),
      "worse.md": "no frontmatter",
    });
    const report = await validatePaths([dir]);
    expect(report.files).toHaveLength(3);
    expect(report.diagnostics.map((d) => [d.file.slice(dir.length + 1), d.line, d.code])).toEqual([
      ["bad.md", 2, "Validation/StageIdInvalid"],
      ["bad.md", 17, "Validation/StageTurnCapTooLow"],
      ["worse.md", 1, "Validation/StageFrontmatterMissing"],
    ]);
  });
  it("validatePaths checks pipelines with their stage files and reports each problem once", async () => {
    const dir = project({ "machines/p.yaml": PIPELINE });
    writeFiles(join(dir, "stages"), { "plan.md": seedPlan.replace("turnCap: 20", "turnCap: 0") });
    const report = await validatePaths([join(dir, "machines/p.yaml"), join(dir, "stages")]);
    expect(report.files).toHaveLength(6);
    expect(report.diagnostics.map((d) => placeOf(dir, d))).toEqual([
      "machines/p.yaml:7:11 Validation/PipelineStageInvalid",
      "stages/plan.md:17:1 Validation/StageTurnCapTooLow",
    ]);
  });

  it("validatePaths checks scripted-model files with the loader it is given, and skips them without one", async () => {
    const dir = tempDir();
    writeFiles(dir, { "p.script.yaml": "anything" });
    expect(await validatePaths([dir])).toEqual({ files: [], diagnostics: [] });
    const loadScript = async (file: string) => ({
      ok: false as const,
      diagnostics: [diagnostic(file, { line: 1, column: 1 }, "Validation/ScriptInvalid", "bad")],
    });
    const report = await validatePaths([dir], { loadScript });
    expect(report.files).toEqual([join(dir, "p.script.yaml")]);
    expect(report.diagnostics.map((d) => d.code)).toEqual(["Validation/ScriptInvalid"]);
  });

  it("validatePaths checks allowedTools against the host's tools it is given", async () => {
    const report = await validatePaths([join(MACHINES_DIR, "code-review.yaml")], {
      toolNames: ["Read", "Grep", "Glob", "Edit"],
    });
    expect(report.diagnostics.map((d) => [d.code, d.message.split(",")[0]])).toEqual([
      ["Validation/UnknownTool", 'allowedTools names "Write"'],
    ]);
  });
});

describe("a definition file over the size limit is named by its kind", () => {
  // The bundled files, copied fresh, each with a comment or body line that takes it past 1 MiB.
  const padding = (comment: string) => `\n${comment}${"x".repeat(MAX_DEFINITION_BYTES)}\n`;
  const grown = (source: string, file: string, comment: string) => {
    const dir = tempDir();
    cpSync(source, dir, { recursive: true });
    appendFileSync(join(dir, file), padding(comment));
    return dir;
  };
  const firstProblem = async (load: Promise<{ ok: boolean; diagnostics?: unknown[] }>) => {
    const result = await load;
    return result.ok ? undefined : result.diagnostics?.[0];
  };
  const release = join(MACHINES_DIR, "pi-release/release");

  it.each([
    [
      "a stage file",
      () => {
        const dir = grown(STAGES_DIR, "plan.md", "");
        return firstProblem(loadStageFile(join(dir, "plan.md")));
      },
      "Validation/StageFileTooLarge",
      "stage file",
    ],
    [
      "a pipeline file",
      () => {
        const dir = grown(MACHINES_DIR, "code-review.yaml", "# ");
        return firstProblem(loadPipelineFile(join(dir, "code-review.yaml")));
      },
      "Validation/PipelineFileTooLarge",
      "pipeline file",
    ],
    [
      "a scripted model's file",
      () => {
        const dir = grown(MACHINES_DIR, "code-review.script.yaml", "# ");
        return firstProblem(loadScriptFile(join(dir, "code-review.script.yaml")));
      },
      "Validation/ScriptFileTooLarge",
      "script file",
    ],
    [
      "a pi-workflows workflow file",
      async () => (await validatePaths([grown(release, "workflow.yaml", "# ")])).diagnostics[0],
      "Validation/WorkflowFileTooLarge",
      "workflow file",
    ],
    [
      "a pi-workflows phase file",
      async () => (await validatePaths([grown(release, "build.md", "")])).diagnostics[0],
      "Validation/WorkflowFileTooLarge",
      "phase file",
    ],
  ])("%s: its own code, and a message that names it", async (_what, load, code, name) => {
    expect(await load()).toMatchObject({
      code,
      message: expect.stringMatching(
        new RegExp(`^is \\d+ bytes; a ${name} is limited to ${MAX_DEFINITION_BYTES} bytes$`),
      ),
    });
  });
});
