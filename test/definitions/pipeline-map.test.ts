import { describe, expect, it } from "vitest";
import { definePipeline, loadPipeline } from "../../src/definitions/index.js";
import { at, load, loaded, positionOf, project } from "../support/pipeline-files.js";

/** A stage run per item of a plan's steps: it reads the item by both its names. */
const REVIEW_STEP = `---
id: review-step
name: Review step
allowedTools: ["Read"]
completionTool: submit_review
completionSchema:
  type: object
  required: [ok]
  properties: { ok: { type: boolean } }
retryPolicy: { maxAttempts: 1, backoff: none }
turnCap: 5
resolutionPolicy: fail
---
Check step {{ctx.itemIndex}} of the plan for {{ctx.task}}: {{ctx.step}} ({{ctx.item}}).
`;

/** plan's steps, each reviewed by review-step, joined by review. */
const MAP = `id: mapped
context:
  type: object
  properties: { task: { type: string } }
entry: plan
stages:
  plan: { file: ../stages/plan.md }
  review-step: { file: ../stages/review-step.md }
  review: { file: ../stages/review.md }
next:
  plan:
    map: { over: output.steps, stage: review-step, as: step, maxItems: 50 }
    join: review
    policy: all-settled
    maxConcurrency: 4
`;

const loadMap = (yaml: string) => load(yaml, { "stages/review-step.md": REVIEW_STEP });

describe("a map group in a pipeline file", () => {
  it("loads into the map transition, its stage's template reading the item", async () => {
    const { result } = await loadMap(MAP);
    expect(result.ok && result.warnings).toEqual([]);
    expect(loaded(result).next.plan).toEqual({
      kind: "map",
      over: "output.steps",
      stage: "review-step",
      as: "step",
      join: "review",
      policy: { kind: "all-settled" },
      maxConcurrency: 4,
      maxItems: 50,
    });
  });

  it("refuses an over path the fan-out stage does not declare, or declares as no list", async () => {
    const unknown = MAP.replace("over: output.steps", "over: output.files");
    const { places, result } = await loadMap(unknown);
    expect(places).toEqual([at(unknown, "over:", "Validation/MapOverUnknown")]);
    expect(!result.ok && result.diagnostics[0]?.message).toBe(
      'next.plan.map.over: output.files names "files", which submit_plan\'s completionSchema does not declare (it declares summary, steps)',
    );
    const text = MAP.replace("over: output.steps", "over: output.summary");
    const notList = await loadMap(text);
    expect(notList.places).toEqual([at(text, "over:", "Validation/MapOverUnknown")]);
    const rootless = MAP.replace("over: output.steps", "over: steps");
    expect((await loadMap(rootless)).places).toContain(
      at(rootless, "over:", "Validation/PipelineDefinitionInvalid"),
    );
  });

  it("refuses an unknown stage, a bad as name, and a join on its own stage", async () => {
    const stage = MAP.replace("stage: review-step,", "stage: reviewer,");
    expect((await loadMap(stage)).places).toContain(
      at(stage, "stage: reviewer", "Validation/PipelineTargetUnknown"),
    );
    const badName = MAP.replace("as: step", "as: 2nd-step");
    expect((await loadMap(badName)).places).toContain(
      at(badName, "as:", "Validation/MapPlanInvalid"),
    );
    const hiding = MAP.replace("as: step", "as: task");
    const hidden = await loadMap(hiding);
    expect(hidden.places).toContain(at(hiding, "as:", "Validation/MapPlanInvalid"));
    const joinSelf = MAP.replace("join: review", "join: review-step");
    expect((await loadMap(joinSelf)).places).toContain(
      at(joinSelf, "join:", "Validation/MapPlanInvalid"),
    );
  });

  it("gives the item's ctx names to its stage only", async () => {
    // Without the group, review-step's template reads fields the context does not declare.
    const plain = MAP.replace(
      / {2}plan:\n(?: {4}.*\n)+/,
      "  plan: review-step\n  review-step: review\n",
    );
    const { places } = await loadMap(plain);
    expect(places.filter((p) => p.includes("StageCtxUnresolved"))).toHaveLength(3);
    // A stage mapped receives no upstream: reading ctx.upstream[0] never renders.
    const upstream = MAP.replace(
      "review-step: { file: ../stages/review-step.md }",
      "review-step: { file: ../stages/execute.md }",
    );
    expect((await loadMap(upstream)).places.some((p) => p.includes("StageCtxUnresolved"))).toBe(
      true,
    );
  });

  it("has its line: a missing join and a bad maxItems point at their keys", async () => {
    const yaml = MAP.replace("    join: review\n", "").replace("maxItems: 50", "maxItems: 0");
    const { result } = await loadMap(yaml);
    const problems = (result.ok ? [] : result.diagnostics).filter((d) => d.file.endsWith("p.yaml"));
    expect(problems.map((d) => [`${d.line}:${d.column}`, d.code])).toEqual([
      [positionOf(yaml, "plan:", "next:"), "Validation/PipelineMissingField"],
      [positionOf(yaml, "maxItems"), "Validation/PipelineDefinitionInvalid"],
    ]);
  });
});

describe("a map group in definePipeline", () => {
  it("is the same transition as in a YAML file", async () => {
    const dir = project({ "stages/review-step.md": REVIEW_STEP });
    const spec = definePipeline({
      id: "mapped",
      context: { type: "object", properties: { task: { type: "string" } } },
      entry: "plan",
      stages: {
        plan: { file: "stages/plan.md" },
        "review-step": { file: "stages/review-step.md" },
        review: { file: "stages/review.md" },
      },
      next: {
        plan: {
          map: { over: "output.steps", stage: "review-step", as: "step" },
          join: "review",
          policy: { quorum: 2 },
        },
      },
    });
    const pipeline = loaded(await loadPipeline(spec, { baseDir: dir }));
    expect(pipeline.next.plan).toEqual({
      kind: "map",
      over: "output.steps",
      stage: "review-step",
      as: "step",
      join: "review",
      policy: { kind: "quorum", k: 2 },
    });
    const wrong = definePipeline({
      ...spec,
      next: {
        plan: { map: { over: "output.nope", stage: "review-step", as: "step" }, join: "review" },
      },
    });
    const refused = await loadPipeline(wrong, { baseDir: dir });
    expect(!refused.ok && refused.diagnostics.map((d) => d.code)).toEqual([
      "Validation/MapOverUnknown",
    ]);
  });
});
