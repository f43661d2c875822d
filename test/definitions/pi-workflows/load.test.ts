import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadWorkflowPipeline } from "../../../src/definitions/pi-workflows/index.js";
import {
  loadWorkflowRoot,
  pipelineOf,
  workflowSession,
} from "../../../src/definitions/pi-workflows/load.js";
import { BUILTIN_TOOL_NAMES } from "../../../src/definitions/pipeline-loader.js";
import { hiddenWorkflow, phase, putFiles, releaseRoot } from "../../support/pi-workflows.js";
import { tempDir } from "../../support/stages.js";

/** The diagnostics of loading `key` in `root`, as `file:line code message` with paths relative to root. */
async function problemsOf(root: string, key: string): Promise<string[]> {
  const loaded = await loadWorkflowPipeline(join(root, key));
  const diagnostics = loaded.ok ? loaded.warnings : loaded.diagnostics;
  return diagnostics.map(
    (d) => `${d.file.slice(root.length + 1)}:${d.line} ${d.code} ${d.message}`,
  );
}

describe("a pi-workflows directory as a pipeline", () => {
  it("builds each workflow once for each place it runs at: a subworkflow inside a workflow is headed by that workflow, not as it is on its own", async () => {
    const root = await loadWorkflowRoot(releaseRoot());
    const session = workflowSession(BUILTIN_TOOL_NAMES);
    const review = await pipelineOf(root, "code-review", BUILTIN_TOOL_NAMES, session);
    const release = await pipelineOf(root, "release", BUILTIN_TOOL_NAMES, session);
    const again = await pipelineOf(root, "release", BUILTIN_TOOL_NAMES, session);
    if (!review.ok || !release.ok || !again.ok) throw new Error("the release root did not load");
    const inRelease = release.value.stages["code-review"];
    if (inRelease?.kind !== "pipeline") throw new Error("code-review is not a sub-pipeline");
    expect(again.value.stages["code-review"]).toBe(inRelease);
    expect(inRelease.pipeline).not.toBe(review.value);
    const phaseBody = (pipeline: typeof review.value) => {
      const stage = pipeline.stages["static-analysis"];
      return stage?.kind === "llm" ? stage.definition.body : "";
    };
    expect(phaseBody(inRelease.pipeline)).toContain("Release task");
    expect(phaseBody(review.value)).not.toContain("Release task");
  });

  it("turns each phase into a stage with the phase's id and workflow_step, and each subworkflow into a sub-pipeline named by its key", async () => {
    const root = releaseRoot();
    const loaded = await loadWorkflowPipeline(join(root, "release"));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const pipeline = loaded.value;
    expect(pipeline.id).toBe("release");
    expect(Object.keys(pipeline.stages)).toEqual(["build", "code-review", "publish"]);
    const review = pipeline.stages["code-review"];
    if (review?.kind !== "pipeline") throw new Error("code-review is not a sub-pipeline");
    expect(review.pipeline.id).toBe("code-review");
    expect(Object.keys(review.pipeline.stages)).toEqual(["static-analysis", "manual-review"]);
    const build = pipeline.stages.build;
    if (build?.kind !== "llm") throw new Error("build is not an LLM stage");
    expect(build.definition).toMatchObject({
      name: "🔨 Build",
      completionTool: "workflow_step",
      // tools.blacklist: [edit, write] — names match the host's tools case-insensitively
      allowedTools: ["Read", "Grep", "Glob", "Bash"],
    });
    expect(build.definition.body).toContain("Build the project for the release");
    expect(build.definition.body).toContain("Release task ({{ctx.workflowRunId}}): {{ctx.task}}");
    expect(build.definition.body).toContain("starting with Build.");
  });

  it("loops only a loopable workflow: release (loopable: false) has no loop rule, code-review loops to its first phase", async () => {
    const loaded = await loadWorkflowPipeline(join(releaseRoot(), "release"));
    if (!loaded.ok) throw new Error("did not load");
    const targets = (next: (typeof loaded.value)["next"], id: string) => {
      const t = next[id];
      return t?.kind === "rules" ? t.rules.map((r) => r.to) : [];
    };
    expect(targets(loaded.value.next, "build")).toEqual(["code-review", "cancel"]);
    expect(targets(loaded.value.next, "code-review")).toEqual(["cancel", "publish"]);
    expect(targets(loaded.value.next, "publish")).toEqual(["done", "cancel"]);
    const review = loaded.value.stages["code-review"];
    if (review?.kind !== "pipeline") throw new Error("not a sub-pipeline");
    expect(targets(review.pipeline.next, "manual-review")).toEqual([
      "done",
      "static-analysis",
      "cancel",
    ]);
  });

  it("keeps upstream text that looks like a stagechart template literal, and leaves unknown placeholders as written", async () => {
    const root = tempDir();
    putFiles(root, {
      "w/workflow.yaml":
        'name: "Odd {{name}}"\ncommandName: odd\ninitialMessage: "Do {description}"\nphases: [a.md]\n',
      "w/a.md": phase("a", "", "Print {{x}} and {unknown}, in {workflowName}."),
    });
    const loaded = await loadWorkflowPipeline(join(root, "w"));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const a = loaded.value.stages.a;
    if (a?.kind !== "llm") throw new Error("a is not an LLM stage");
    expect(a.definition.body).toContain("Do {{ctx.task}}");
    expect(a.definition.body).toContain("Print \\{{x}} and {unknown}, in Odd \\{{name}}.");
  });

  it("reports every workflow.yaml rule, each at its field", async () => {
    const root = tempDir();
    putFiles(root, {
      "w/workflow.yaml":
        'name: ""\ncommandName: "bad name"\nshow: everyone\nloopable: sometimes\nphases: []\n',
    });
    expect(await problemsOf(root, "w")).toEqual([
      "w/workflow.yaml:1 Validation/WorkflowInvalid name is required and must not be empty",
      'w/workflow.yaml:3 Validation/WorkflowInvalid show must be "user" or "workflows", not "everyone"',
      "w/workflow.yaml:2 Validation/WorkflowInvalid commandName may hold only letters, digits, _ and -",
      'w/workflow.yaml:1 Validation/WorkflowInvalid initialMessage is required unless show is "workflows"',
      "w/workflow.yaml:4 Validation/WorkflowInvalid loopable must be true or false",
      "w/workflow.yaml:5 Validation/WorkflowInvalid phases must list at least one phase file or { subworkflow: <key> }",
    ]);
  });

  it("needs commandName and initialMessage only for a user-facing workflow", async () => {
    const root = tempDir();
    putFiles(root, {
      "user/workflow.yaml": "name: User\nphases: [a.md]\n",
      "user/a.md": phase("a"),
      "hidden/workflow.yaml": hiddenWorkflow("Hidden", ["a.md"]),
      "hidden/a.md": phase("a"),
    });
    expect(await problemsOf(root, "user")).toEqual([
      'user/workflow.yaml:1 Validation/WorkflowInvalid commandName is required unless show is "workflows"',
      'user/workflow.yaml:1 Validation/WorkflowInvalid initialMessage is required unless show is "workflows"',
    ]);
    // Valid, but it runs only as a subworkflow.
    expect(await problemsOf(root, "hidden")).toEqual([
      'hidden/workflow.yaml:1 Validation/WorkflowNotRunnable workflow "hidden" has show: workflows, so it runs only as a subworkflow; run a workflow that uses it',
    ]);
  });

  it("reports every phase file rule: id, name, emoji, one tools list, a body, unique ids", async () => {
    const root = tempDir();
    putFiles(root, {
      "w/workflow.yaml": hiddenWorkflow("W", [
        "bare.md",
        "tools.md",
        "empty.md",
        "a.md",
        "again.md",
      ]),
      "w/bare.md": "---\nid: Not Kebab\n---\nBody.\n",
      "w/tools.md": phase("tools", "tools:\n  whitelist: [read]\n  blacklist: [bash]\n"),
      "w/empty.md": phase("empty", "", "   "),
      "w/a.md": phase("a"),
      "w/again.md": phase("a"),
    });
    expect(await problemsOf(root, "w")).toEqual([
      'w/bare.md:2 Validation/WorkflowPhaseInvalid id "Not Kebab" must be kebab-case (lowercase words joined by single hyphens): it becomes a stage id',
      "w/bare.md:1 Validation/WorkflowPhaseInvalid name is required and must be a non-empty string",
      "w/bare.md:1 Validation/WorkflowPhaseInvalid emoji is required and must be a non-empty string",
      "w/tools.md:5 Validation/WorkflowPhaseInvalid tools may set whitelist or blacklist, not both",
      "w/empty.md:6 Validation/WorkflowPhaseInvalid the phase has no instructions: its body is empty",
      'w/workflow.yaml:3 Validation/WorkflowPhaseInvalid phase id "a" is used twice in this workflow',
    ]);
  });

  it("refuses a phase path that leaves the workflows root, by .. or through a link, or names the root itself", async () => {
    const root = tempDir();
    const outside = tempDir();
    putFiles(outside, { "x.md": phase("x") });
    putFiles(root, {
      "w/workflow.yaml": hiddenWorkflow("W", [
        "../../outside.md",
        "link.md",
        "..",
        "../_shared/ok.md",
      ]),
      "_shared/ok.md": phase("ok"),
    });
    symlinkSync(join(outside, "x.md"), join(root, "w/link.md"));
    const problems = await problemsOf(root, "w");
    // ../_shared/ok.md stays inside the root: only the three others are refused.
    expect(problems.map((p) => p.split(" ").slice(1, 5).join(" "))).toEqual([
      "Validation/WorkflowPathUnsafe phase path ../../outside.md",
      "Validation/WorkflowPathUnsafe phase path link.md",
      "Validation/WorkflowPathUnsafe phase path ..",
    ]);
  });

  it("removes a workflow whose subworkflows form a cycle, and every workflow that uses it, transitively", async () => {
    const root = tempDir();
    putFiles(root, {
      "top/workflow.yaml": hiddenWorkflow("Top", [{ subworkflow: "mid" }]),
      "mid/workflow.yaml": hiddenWorkflow("Mid", ["a.md", { subworkflow: "a" }]),
      "mid/a.md": phase("a"),
      "a/workflow.yaml": hiddenWorkflow("A", [{ subworkflow: "b" }]),
      "b/workflow.yaml": hiddenWorkflow("B", [{ subworkflow: "a" }]),
      "self/workflow.yaml": hiddenWorkflow("Self", [{ subworkflow: "self" }]),
    });
    expect(await problemsOf(root, "top")).toEqual([
      'top/workflow.yaml:3 Validation/WorkflowReferenceBroken workflow "top" is removed: it uses subworkflow "mid", which is removed (it uses subworkflow "a", which is removed (its subworkflows form a cycle: a → b → a))',
      'mid/workflow.yaml:3 Validation/WorkflowReferenceBroken workflow "mid" is removed: it uses subworkflow "a", which is removed (its subworkflows form a cycle: a → b → a)',
      'a/workflow.yaml:3 Validation/WorkflowCycle workflow "a" is removed: its subworkflows form a cycle: a → b → a',
      'b/workflow.yaml:3 Validation/WorkflowCycle workflow "b" is removed: its subworkflows form a cycle: a → b → a',
    ]);
    expect(await problemsOf(root, "self")).toEqual([
      'self/workflow.yaml:3 Validation/WorkflowCycle workflow "self" is removed: its subworkflows form a cycle: self → self',
    ]);
  });

  it("removes a workflow that uses a missing or broken one, and the workflows above it (upstream stops after one level)", async () => {
    const root = tempDir();
    putFiles(root, {
      "a/workflow.yaml": hiddenWorkflow("A", [{ subworkflow: "b" }]),
      "b/workflow.yaml": hiddenWorkflow("B", [{ subworkflow: "c" }]),
      "c/workflow.yaml": hiddenWorkflow("C", [{ subworkflow: "gone" }]),
      "d/workflow.yaml": hiddenWorkflow("D", [{ subworkflow: "broken" }]),
      "broken/workflow.yaml": "name: Broken\nshow: workflows\nphases: []\n",
    });
    const problems = await problemsOf(root, "a");
    expect(problems.map((p) => p.split(" ").slice(0, 4).join(" "))).toEqual([
      'a/workflow.yaml:3 Validation/WorkflowReferenceBroken workflow "a"',
      'b/workflow.yaml:3 Validation/WorkflowReferenceBroken workflow "b"',
      'c/workflow.yaml:3 Validation/WorkflowReferenceBroken workflow "c"',
    ]);
    expect(problems[2]).toContain(
      'it uses subworkflow "gone", and there is no workflow directory of that name',
    );
    expect(await problemsOf(root, "d")).toEqual([
      'd/workflow.yaml:3 Validation/WorkflowReferenceBroken workflow "d" is removed: it uses subworkflow "broken", which did not load (its problems are reported in it)',
      "broken/workflow.yaml:3 Validation/WorkflowInvalid phases must list at least one phase file or { subworkflow: <key> }",
    ]);
  });
});
