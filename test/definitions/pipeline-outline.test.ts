import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/index.js";
import {
  drawableDefinition,
  isPipelineOutline,
  outlineOf,
} from "../../src/definitions/pipeline-outline.js";
import { pipelineChart } from "../../src/inspect/chart.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";

const bundled = async (name: string) => {
  const loaded = await loadPipelineFile(join(MACHINES_DIR, `${name}.yaml`));
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  return loaded.value;
};

describe("a pipeline's outline", () => {
  it.each(["code-review", "code-review-parallel", "arena-debate", "task-lifecycle"])(
    "of %s draws, read back from its JSON, the chart its definition draws",
    async (name) => {
      const pipeline = await bundled(name);
      const stored = JSON.parse(JSON.stringify(outlineOf(pipeline))) as unknown;
      expect(isPipelineOutline(stored)).toBe(true);
      if (!isPipelineOutline(stored)) return;
      expect(pipelineChart(drawableDefinition(stored))).toEqual(pipelineChart(pipeline));
    },
  );

  it("keeps no prompt, stage body, schema, command or code of the pipeline", () => {
    const pipeline = pipelineOf({
      stages: [
        llm("plan", (text) => `${text}\nCANARY-BODY\n`),
        code("check", () => ({ verdict: "ok", output: "CANARY-CODE" })),
        { kind: "command", id: "build", command: "make CANARY-COMMAND", timeoutMs: 1000 },
        {
          kind: "ask",
          id: "confirm",
          prompt: "CANARY-PROMPT?",
          schema: { title: "CANARY-SCHEMA" },
        },
      ],
      next: { plan: "check", check: "build", build: "confirm" },
    });
    const text = JSON.stringify(outlineOf(pipeline));
    expect(text).not.toMatch(/CANARY/);
    expect(outlineOf(pipeline).stages).toEqual({
      plan: { kind: "llm" },
      check: { kind: "code" },
      build: { kind: "command" },
      confirm: { kind: "ask" },
    });
  });

  it("is not what a damaged value is: a stage of no known kind, a sub-pipeline with none", () => {
    const outline = { id: "p", entry: "a", stages: { a: { kind: "llm" } }, next: {} };
    expect(isPipelineOutline(outline)).toBe(true);
    expect(isPipelineOutline({ ...outline, stages: { a: { kind: "lambda" } } })).toBe(false);
    expect(isPipelineOutline({ ...outline, stages: { a: { kind: "pipeline" } } })).toBe(false);
    expect(isPipelineOutline("p")).toBe(false);
  });
});
