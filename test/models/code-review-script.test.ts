import { join } from "node:path";
import type { LanguageModelV3 } from "@ai-sdk/provider";
import { describe, expect, it } from "vitest";
import { loadStageFile, type StageDefinition } from "../../src/definitions/index.js";
import { compileSchema } from "../../src/definitions/json-schema.js";
import { createScriptedModelFromFile } from "../../src/models/index.js";
import { STAGES_DIR, tempDir, writeFiles } from "../support/stages.js";

const CODE_REVIEW_SCRIPT = join(import.meta.dirname, "fixtures/code-review.script.yaml");

async function loadStage(id: string): Promise<StageDefinition> {
  const loaded = await loadStageFile(join(STAGES_DIR, `${id}.md`));
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  return loaded.value;
}

async function seedModel(): Promise<LanguageModelV3> {
  const loaded = await createScriptedModelFromFile(CODE_REVIEW_SCRIPT);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  return loaded.value.model;
}

/** Every tool call the model makes for a stage until its script runs out. */
async function callsOf(model: LanguageModelV3, stageId: string) {
  const calls: { tool: string; args: Record<string, unknown> }[] = [];
  for (let turn = 1; ; turn++) {
    const result = await model.doGenerate({
      prompt: [],
      providerOptions: {
        stagechart: { stageId, stageExecutionId: `r/${stageId}/1`, attempt: 1, turn },
      },
    });
    const made = result.content.flatMap((part) =>
      part.type === "tool-call" ? [{ tool: part.toolName, args: JSON.parse(part.input) }] : [],
    );
    if (made.length === 0) return calls;
    calls.push(...made);
  }
}

describe("the code-review script", () => {
  it("plays the code-review pipeline", async () => {
    const model = await seedModel();
    expect((await callsOf(model, "plan")).map((c) => c.tool)).toEqual([
      "Edit",
      "Grep",
      "submit_plan",
    ]);
    expect(await callsOf(model, "execute")).toEqual([
      { tool: "Edit", args: expect.objectContaining({ path: "src/auth.ts" }) },
      {
        tool: "submit_diff",
        args: expect.objectContaining({ files: [{ path: "src/auth.ts", change: "modified" }] }),
      },
    ]);
    expect(await callsOf(model, "review")).toEqual([
      { tool: "submit_review", args: expect.objectContaining({ approved: true, findings: [] }) },
    ]);
  });

  it("opens plan with a call outside plan's envelope", async () => {
    const [first] = await callsOf(await seedModel(), "plan");
    expect((await loadStage("plan")).allowedTools).not.toContain(first?.tool);
  });

  it.each(["plan", "execute", "review"])(
    "ends %s with a payload its completion schema accepts",
    async (stageId) => {
      const stage = await loadStage(stageId);
      const completion = (await callsOf(await seedModel(), stageId)).at(-1);
      expect(completion?.tool).toBe(stage.completionTool);
      const validate = compileSchema(stage.completionSchema);
      if (!validate.ok) throw new Error(`${stageId}: schema does not compile`);
      expect(validate.value(completion?.args), JSON.stringify(validate.value.errors)).toBe(true);
    },
  );

  it("reports a broken script file instead of a model", async () => {
    const dir = tempDir();
    writeFiles(dir, { "bad.script.yaml": "stages:\n  plan: [{ tool: Edit, tol: x }]\n" });
    const loaded = await createScriptedModelFromFile(join(dir, "bad.script.yaml"));
    expect(loaded).toEqual({
      ok: false,
      diagnostics: [
        expect.objectContaining({ line: 2, column: 24, code: "Validation/ScriptInvalid" }),
      ],
    });
  });
});
