import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadWorkflowPipeline } from "../../../src/definitions/pi-workflows/index.js";
import type { PipelineDefinition } from "../../../src/definitions/pipeline-types.js";
import { hiddenWorkflow, phase, putFiles, releaseRoot } from "../../support/pi-workflows.js";

const PROBE = "Where: {breadcrumbPath}. Next: {nextPhaseName}. Step {globalStepCount}.";

/**
 * A fresh copy of machines/pi-release, one level deeper: code-review ends with a `lint`
 * subworkflow of one phase, so the end of lint is the end of code-review too. Every phase's
 * instructions end with PROBE.
 */
async function deepRelease(): Promise<PipelineDefinition> {
  const root = releaseRoot();
  putFiles(root, {
    "lint/workflow.yaml": hiddenWorkflow("Lint", ["lint-check.md"]),
    "lint/lint-check.md": phase("lint-check"),
  });
  appendFileSync(join(root, "code-review/workflow.yaml"), "  - subworkflow: lint\n");
  for (const file of [
    "release/build.md",
    "release/publish.md",
    "code-review/static-analysis.md",
    "code-review/manual-review.md",
    "lint/lint-check.md",
  ])
    appendFileSync(join(root, file), `\n${PROBE}\n`);
  const loaded = await loadWorkflowPipeline(join(root, "release"));
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  return loaded.value;
}

/** The body of the phase at `path`: stage ids, through sub-pipelines. */
function bodyAt(pipeline: PipelineDefinition, ...path: string[]): string {
  const [id, ...rest] = path;
  const stage = pipeline.stages[id as string];
  if (rest.length > 0) {
    if (stage?.kind !== "pipeline") throw new Error(`${id} is not a sub-pipeline`);
    return bodyAt(stage.pipeline, ...rest);
  }
  if (stage?.kind !== "llm") throw new Error(`${id} is not a phase`);
  return stage.definition.body;
}

describe("the pi-workflows prompt variables of a phase", () => {
  it("{breadcrumbPath}: the names from the root workflow down to the phase, joined by ' > '", async () => {
    const release = await deepRelease();
    expect(bodyAt(release, "build")).toContain("Where: Release Pipeline > Build.");
    expect(bodyAt(release, "code-review", "static-analysis")).toContain(
      "Where: Release Pipeline > Code Review > Static Analysis.",
    );
    expect(bodyAt(release, "code-review", "lint", "lint-check")).toContain(
      "Where: Release Pipeline > Code Review > Lint > lint-check phase.",
    );
  });

  it("{nextPhaseName} at the end of an inner scope is the parent's next phase, found outward; DONE only at the end of the root", async () => {
    const release = await deepRelease();
    // lint ends code-review, which release follows with Publish.
    expect(bodyAt(release, "code-review", "lint", "lint-check")).toContain("Next: Publish.");
    expect(bodyAt(release, "code-review", "static-analysis")).toContain("Next: Manual Review.");
    expect(bodyAt(release, "publish")).toContain("Next: DONE.");
    expect(bodyAt(release, "code-review", "lint", "lint-check")).not.toContain("DONE");
  });

  it("{globalStepCount} is the run's count of phase executions before this one, filled in when the phase starts", async () => {
    const release = await deepRelease();
    expect(bodyAt(release, "build")).toContain("Step {{ctx.stagesBefore}}.");
    expect(bodyAt(release, "code-review", "lint", "lint-check")).toContain(
      "Step {{ctx.stagesBefore}}.",
    );
  });

  it("the root workflow's initialMessage heads the phases of its subworkflows too, with the root's names", async () => {
    const release = await deepRelease();
    const head =
      "Release task ({{ctx.workflowRunId}}): {{ctx.task}}\nWork through the phases of Release Pipeline in order, starting with Build.";
    expect(bodyAt(release, "build")).toContain(head);
    expect(bodyAt(release, "code-review", "static-analysis")).toContain(head);
    expect(bodyAt(release, "code-review", "lint", "lint-check")).toContain(head);
    expect(bodyAt(release, "code-review", "manual-review")).not.toContain("Task: {{ctx.task}}");
  });
});
