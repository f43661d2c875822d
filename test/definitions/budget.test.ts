import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipeline, loadPipelineFile } from "../../src/definitions/index.js";
import { loaded, MACHINES_DIR } from "../support/pipeline-files.js";
import { tempDir } from "../support/stages.js";

const spec = (budget: unknown) => ({
  id: "budgeted",
  context: { type: "object", properties: { task: { type: "string" } } },
  entry: "plan",
  stages: { plan: { file: "../stages/plan.md" }, review: { file: "../stages/review.md" } },
  next: { plan: "review" },
  budget,
});

const problemsOf = async (budget: unknown) => {
  const result = await loadPipeline(spec(budget) as never, { baseDir: MACHINES_DIR });
  return (result.ok ? result.warnings : result.diagnostics).map((d) => d.message);
};

describe("a pipeline's budget", () => {
  it("sets the run's limits and each named stage's", async () => {
    const budget = {
      run: { maxCostUsd: 2.5, maxSeconds: 600 },
      stages: { review: { maxOutputTokens: 8000, maxInputTokens: 200000 } },
    };
    const pipeline = loaded(await loadPipeline(spec(budget) as never, { baseDir: MACHINES_DIR }));
    expect(pipeline.budget).toEqual(budget);
  });

  it("refuses a stage it does not have, an unknown limit, a limit at 0 or an empty budget", async () => {
    expect(await problemsOf({ stages: { reveiw: { maxCostUsd: 1 } } })).toContainEqual(
      expect.stringContaining(
        'budget.stages.reveiw: a stage budget limits the model calls of an LLM stage of this pipeline, and "reveiw" is not one',
      ),
    );
    expect((await problemsOf({ run: { maxTokens: 10 } })).join()).toMatch(/maxTokens/);
    expect((await problemsOf({ run: { maxCostUsd: 0 } })).join()).toMatch(/must be above 0/);
    expect((await problemsOf({ run: {} })).join()).toMatch(/must set at least one of/);
    expect((await problemsOf({ run: { maxInputTokens: 1.5 } })).join()).toMatch(/whole number/);
  });

  it("like a sub-pipeline's grants block, is not applied to it nested, and validate says so", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "inner.yaml"),
      `id: inner\ncontext: { type: object, properties: { task: { type: string } } }\nentry: plan\nstages:\n  plan: { file: ${join(MACHINES_DIR, "../stages/plan.md")} }\ngrants:\n  approve: []\n  timeout: { after: 10m, fallback: deny }\n`,
    );
    writeFileSync(
      join(dir, "outer.yaml"),
      "id: outer\ncontext: { type: object, properties: { task: { type: string } } }\nentry: inner\nstages:\n  inner: { pipeline: ./inner.yaml }\n",
    );
    const result = await loadPipelineFile(join(dir, "outer.yaml"));
    expect(result.ok && result.warnings.map((w) => [w.severity, w.message])).toEqual([
      [
        "warning",
        expect.stringContaining("grants applies when it runs by itself, not as the stage inner"),
      ],
    ]);
    // Run by itself, the same file loads without the warning.
    const alone = await loadPipelineFile(join(dir, "inner.yaml"));
    expect(alone.ok && alone.warnings).toEqual([]);
  });

  it("is not applied to a sub-pipeline's run, and validate says so", async () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, "inner.yaml"),
      `id: inner\ncontext: { type: object, properties: { task: { type: string } } }\nentry: plan\nstages:\n  plan: { file: ${join(MACHINES_DIR, "../stages/plan.md")} }\nbudget:\n  run: { maxCostUsd: 1 }\n`,
    );
    writeFileSync(
      join(dir, "outer.yaml"),
      "id: outer\ncontext: { type: object, properties: { task: { type: string } } }\nentry: inner\nstages:\n  inner: { pipeline: ./inner.yaml }\n",
    );
    const result = await loadPipelineFile(join(dir, "outer.yaml"));
    expect(result.ok || result.diagnostics).toBe(true);
    expect(result.ok && result.warnings.map((w) => [w.severity, w.message])).toContainEqual([
      "warning",
      expect.stringContaining("budget applies when it runs by itself, not as the stage inner"),
    ]);
  });
});
