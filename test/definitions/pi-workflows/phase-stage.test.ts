import { createRequire } from "node:module";
import { join } from "node:path";
import * as jsYaml from "js-yaml";
import { describe, expect, it, vi } from "vitest";
import { loadWorkflowPipeline } from "../../../src/definitions/pi-workflows/index.js";
import { releaseRoot } from "../../support/pi-workflows.js";

// The real parsers, counted: a phase's stage is built as data, not written out as YAML and read
// back. Plain YAML is read with js-yaml, the rest with `yaml`, which src/definitions requires.
vi.mock("js-yaml", async (original) => {
  const real = await original<typeof import("js-yaml")>();
  return { ...real, load: vi.fn(real.load) };
});
const yaml = createRequire(import.meta.url)("yaml") as typeof import("yaml");
const parseDocument = vi.spyOn(yaml, "parseDocument");
const stringify = vi.spyOn(yaml, "stringify");
const parsedDocuments = () =>
  parseDocument.mock.calls.length + vi.mocked(jsYaml.load).mock.calls.length;

describe("a pi-workflows phase as a stage", () => {
  it("is built from the phase directly: loading a workflow parses only its own files' YAML", async () => {
    const root = releaseRoot();
    parseDocument.mockClear();
    vi.mocked(jsYaml.load).mockClear();
    const loaded = await loadWorkflowPipeline(join(root, "release"));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    // release and code-review: 2 workflow.yaml files and 4 phase files, one YAML document each.
    expect(parsedDocuments()).toBe(6);
    expect(stringify).not.toHaveBeenCalled();
  });

  it("keeps every field a stage file would have: retries, turn cap, resolution policy and the workflow's facts", async () => {
    const loaded = await loadWorkflowPipeline(join(releaseRoot(), "release"));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const build = loaded.value.stages.build;
    if (build?.kind !== "llm") throw new Error("build is not an LLM stage");
    expect(build.definition).toMatchObject({
      id: "build",
      description: 'phase 1 of 3 of the workflow "Release Pipeline"',
      completionSchema: { type: "object", required: ["action"] },
      retryPolicy: { maxAttempts: 2, backoff: "none", delayMs: expect.any(Number) },
      turnCap: 40,
      resolutionPolicy: "fail",
      tags: [],
      extensions: { piWorkflow: { workflow: "release", loopable: false } },
    });
    expect(build.definition.template.ctxReferences.length).toBeGreaterThan(0);
  });
});
