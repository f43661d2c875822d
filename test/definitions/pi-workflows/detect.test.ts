import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expandDefinitionPaths } from "../../../src/definitions/files.js";
import { isWorkflowDirectory, workflowKeys } from "../../../src/definitions/pi-workflows/detect.js";
import { releaseRoot } from "../../support/pi-workflows.js";
import { tempDir } from "../../support/stages.js";

describe("telling pi-workflows directories apart (one rule for loading and for validate)", () => {
  it("a workflow directory holds workflow.yaml; a workflows root's keys are those directories, sorted", () => {
    const root = releaseRoot();
    mkdirSync(join(root, "notes"));
    writeFileSync(join(root, "notes", "readme.md"), "# not a workflow\n");
    expect(isWorkflowDirectory(join(root, "release"))).toBe(true);
    expect(isWorkflowDirectory(join(root, "notes"))).toBe(false);
    expect(isWorkflowDirectory(join(root, "release", "workflow.yaml"))).toBe(false);
    expect(isWorkflowDirectory(join(root, "missing"))).toBe(false);
    expect(workflowKeys(root)).toEqual(["code-review", "release"]);
    expect(workflowKeys(join(root, "missing"))).toEqual([]);
  });

  it("validate expands a workflows root into exactly the workflow directories the loader finds", async () => {
    const root = releaseRoot();
    const linked = tempDir();
    symlinkSync(join(root, "release"), join(linked, "release"));
    const expanded = await expandDefinitionPaths([root, linked]);
    expect(expanded.workflows).toEqual([
      ...workflowKeys(root).map((key) => join(root, key)),
      ...workflowKeys(linked).map((key) => join(linked, key)),
    ]);
  });
});
