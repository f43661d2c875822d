import { describe, expect, it } from "vitest";
import { definePipeline, loadPipeline } from "../../src/definitions/index.js";
import { DECIDING as ASKING } from "../support/ask-pipelines.js";
import { at, load, loaded } from "../support/pipeline-files.js";

describe("an ask entry", () => {
  it("loads from YAML into an ask stage with its prompt and schema", async () => {
    const { result } = await load(ASKING);
    expect(loaded(result).stages.decide).toEqual({
      kind: "ask",
      id: "decide",
      prompt: "Accept the change?",
      schema: {
        type: "object",
        required: ["decision"],
        properties: { decision: { enum: ["accepted", "rejected"] } },
        additionalProperties: false,
      },
    });
  });

  it("refuses a schema that does not compile, pointing inside it", async () => {
    const yaml = ASKING.replace("type: object", "type: objekt");
    const { places, result } = await load(yaml);
    expect(places).toEqual([at(yaml, "type: objekt", "Validation/PipelineDefinitionInvalid")]);
    expect(result.ok ? "" : result.diagnostics[0]?.message).toContain("stages.decide.ask.schema");
  });

  it("refuses an unknown key and a missing prompt", async () => {
    const extra = ASKING.replace("      prompt: Accept the change?", "      question: x");
    const { places } = await load(extra);
    expect(places).toEqual([
      at(extra, "ask:", "Validation/PipelineMissingField"),
      at(extra, "question", "Validation/PipelineDefinitionInvalid"),
    ]);
  });

  it("refuses an entry that is both an ask and a command", async () => {
    const both = ASKING.replace("    ask:", "    run: npm test\n    ask:");
    const { result } = await load(both);
    expect(result.ok ? [] : result.diagnostics.map((d) => d.message).join("\n")).toContain(
      "this one also has run",
    );
  });

  it("is written the same way in definePipeline", async () => {
    const spec = definePipeline({
      id: "asking",
      entry: "decide",
      stages: { decide: { ask: { prompt: "Accept?", schema: { type: "boolean" } } } },
      next: { decide: [{ when: { path: "output", equals: true }, to: "done" }, { to: "fail" }] },
    });
    const pipeline = loaded(await loadPipeline(spec, { baseDir: "." }));
    expect(pipeline.stages.decide).toEqual({
      kind: "ask",
      id: "decide",
      prompt: "Accept?",
      schema: { type: "boolean" },
    });
  });
});
