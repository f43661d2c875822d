import { describe, expect, it } from "vitest";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { pipelinePaths } from "../../src/testing/paths.js";
import { runPath } from "../../src/testing/run-path.js";
import { testPipeline } from "../../src/testing/test-pipeline.js";
import { load, loaded } from "../support/pipeline-files.js";
import { llm, pipelineOf } from "../support/pipelines.js";

/** The ctx every pipeline here declares (the bundled stages read ctx.task). */
const CONTEXT = "context: { type: object, properties: { task: { type: string } } }";

/** plan, then `inner` runs machines/sub.yaml as one stage; the run ends as inner does. */
const PARENT = `id: parent
${CONTEXT}
entry: plan
stages:
  plan: { file: ../stages/plan.md }
  inner: { pipeline: ./sub.yaml }
next:
  plan: inner
`;

/** machines/p.yaml (PARENT) over `files`, loaded from a fresh project. */
async function parentOver(files: Record<string, string>): Promise<PipelineDefinition> {
  const { result } = await load(PARENT, files);
  return loaded(result);
}

const throughInner = {
  steps: [
    { stage: "plan", outcome: "ok" },
    { stage: "inner", outcome: "ok" },
  ],
  end: "done" as const,
};

describe("driving a path through a sub-pipeline's stages", () => {
  it("keys each visit of a stage inside the sub-pipeline by the visit the statechart counts", async () => {
    // Inside inner, the nested sub-pipeline `deep` runs twice (plan between); either run failing fails inner.
    const pipeline = await parentOver({
      "machines/sub.yaml": `id: sub
${CONTEXT}
entry: deep
stages:
  deep: { pipeline: ./innermost.yaml }
  plan: { file: ../stages/plan.md }
next:
  deep:
    - { when: { path: verdict, equals: fail }, to: fail }
    - { when: { visits: deep, gte: 2 }, to: done }
    - { to: plan }
  plan: deep
`,
      "machines/innermost.yaml": `id: innermost
${CONTEXT}
entry: review
stages:
  review: { file: ../stages/review.md }
`,
    });
    const run = await runPath(pipeline, throughInner, { timeoutMs: 10_000 });
    expect({ ok: run.ok, reason: run.reason }).toEqual({ ok: true, reason: undefined });
    expect(run.actual).toEqual({
      transitions: ["plan → inner (sequential)", "inner → done (terminal)"],
      end: "done",
    });
  });

  it("answers an ask stage inside the sub-pipeline, on each of its visits, as the sub-path says", async () => {
    // Inside inner, a person decides twice (plan between); a rejection fails inner.
    const pipeline = await parentOver({
      "machines/sub.yaml": `id: sub
${CONTEXT}
entry: decide
stages:
  decide:
    ask:
      prompt: Accept the change?
      schema:
        type: object
        required: [decision]
        properties: { decision: { enum: [accepted, rejected] } }
        additionalProperties: false
  plan: { file: ../stages/plan.md }
next:
  decide:
    - { when: { path: output.decision, equals: rejected }, to: fail }
    - { when: { visits: decide, gte: 2 }, to: done }
    - { to: plan }
  plan: decide
`,
    });
    const run = await runPath(pipeline, throughInner, { timeoutMs: 10_000 });
    expect({ ok: run.ok, reason: run.reason }).toEqual({ ok: true, reason: undefined });
    expect(run.actual.end).toBe("done");
    // Every path of the parent passes, so every transition between its stages is covered.
    const report = await testPipeline(pipeline, { timeoutMs: 10_000 });
    expect(report.paths.filter((p) => !p.ok)).toEqual([]);
    expect(report.coverage.transitions.uncovered).toEqual([]);
    expect(pipelinePaths(pipeline).paths.map((p) => p.end)).toContain("done");
  });

  it("answers a gate inside the sub-pipeline as the sub-path says, not as its real hook would", async () => {
    const review = llm("review");
    if (review.kind !== "llm") throw new Error("review is an LLM stage");
    // The real gate blocks review every time, and under `fail` a block fails it.
    const sub = pipelineOf({
      id: "sub",
      stages: [{ ...review, definition: { ...review.definition, resolutionPolicy: "fail" } }],
      hooks: { review: { gate: () => "block" as const } },
    });
    const pipeline = pipelineOf({
      id: "parent",
      stages: [llm("plan"), { kind: "pipeline", id: "inner", pipeline: sub }],
      next: { plan: "inner" },
    });
    const run = await runPath(pipeline, throughInner, { timeoutMs: 10_000 });
    expect({ ok: run.ok, reason: run.reason }).toEqual({ ok: true, reason: undefined });
  });
});
