import { describe, expect, it } from "vitest";
import { graphTransitions } from "../../src/testing/coverable.js";
import { modelledTransitions } from "../../src/testing/covering.js";
import { pipelinePaths, testPipeline } from "../../src/testing/index.js";
import { essayPipeline } from "../support/essay-pipeline.js";

const RETRIES_RUN_OUT = "essay.draft -> essay.failed [xstate.done.actor.draft: failed]";
const CAP_HIT = "essay.outline -> essay.failed [xstate.done.actor.outline: failed]";
const OUT_OF_DRAFTS = "essay.draft -> essay.failed [xstate.done.actor.draft: otherwise]";

describe("paths that cover transitions, on a pipeline with an in condition, thresholds, a visits-bounded loop and an all-settled fan-out", () => {
  it("take every transition of the graph on the model, draft's retries running out to failed among them", async () => {
    const essay = await essayPipeline();
    const list = pipelinePaths(essay, { cover: "transitions" });
    const taken = new Set(
      list.paths.flatMap((path) => modelledTransitions(essay, list.ctx, path.steps)),
    );
    expect(graphTransitions(essay).filter((t) => !taken.has(t))).toEqual([]);
    expect(list.untaken).toEqual([]);
    expect(list.paths).toContainEqual(
      expect.objectContaining({
        end: "failed",
        steps: expect.arrayContaining([{ stage: "draft", outcome: "retries-exhausted" }]),
      }),
    );
    // One path to each distinct end state is many more paths, and still misses two of them.
    const states = pipelinePaths(essay);
    expect(list.paths.length).toBeLessThan(states.paths.length / 2);
    const statesTake = new Set(
      states.paths.flatMap((path) => modelledTransitions(essay, states.ctx, path.steps)),
    );
    expect([RETRIES_RUN_OUT, CAP_HIT].filter((t) => !statesTake.has(t))).toEqual([
      RETRIES_RUN_OUT,
      CAP_HIT,
    ]);
  });

  it("are what testPipeline drives by default: the real runs take every transition", async () => {
    const essay = await essayPipeline();
    const report = await testPipeline(essay, { timeoutMs: 10_000 });
    expect(report.failed).toBe(0);
    expect(report.coverage.transitions.uncovered).toEqual([]);
    expect(report.coverage.transitions.total).toBe(graphTransitions(essay).length);
    // The paths to each end state leave three ways to failed uncovered, and say a path takes them.
    const byStates = await testPipeline(essay, { cover: "states", timeoutMs: 10_000 });
    expect(byStates.coverage.transitions.uncovered).toEqual(
      [CAP_HIT, OUT_OF_DRAFTS, RETRIES_RUN_OUT].map((transition) => ({
        transition,
        reason:
          "no path of the list takes it, though one does within --max-visits 3 (paths --cover transitions)",
      })),
    );
  });
});

describe("paths that cover the boundaries", () => {
  it("add to the transitions a path on either side of a visits threshold and through each tally of a group", async () => {
    const essay = await essayPipeline();
    const transitions = pipelinePaths(essay, { cover: "transitions" });
    const boundaries = pipelinePaths(essay, { cover: "boundaries" });
    expect(boundaries.cover).toBe("boundaries");
    // visits draft lt 3 on either side: draft looping at its second visit, not at its third.
    const loops = "ok: not output.score lt 2, not output.score gte 7";
    expect(
      boundaries.paths.some(
        (p) => p.steps.filter((s) => s.stage === "draft" && s.outcome === loops).length === 3,
      ),
    ).toBe(true);
    // A sibling of the all-settled group failing, which no transition needs.
    const siblingFails = (list: typeof boundaries) =>
      list.paths.some((p) =>
        p.steps.some((s) => ["grammar", "style"].includes(s.stage) && s.outcome === "cap-hit"),
      );
    expect(siblingFails(transitions)).toBe(false);
    expect(siblingFails(boundaries)).toBe(true);
    // Each tally: grammar failing first, and both failing, among them.
    const settling = (p: (typeof boundaries.paths)[number]) =>
      p.steps.filter((s) => ["grammar", "style"].includes(s.stage)).map((s) => s.outcome);
    expect(boundaries.paths.map(settling)).toEqual(
      expect.arrayContaining([["cap-hit", "cap-hit"], expect.arrayContaining(["cap-hit"])]),
    );
  });
});

describe("a transition no path takes", () => {
  it("is said to lie beyond --max-visits when a higher bound takes it, naming that bound", async () => {
    const essay = await essayPipeline();
    const list = pipelinePaths(essay, { cover: "transitions", maxVisits: 1 });
    expect(list.untaken).toEqual([
      {
        transition: "essay.draft -> essay.draft [xstate.done.actor.draft: visits draft lt 3]",
        reason: "beyond --max-visits 1: a path takes it with --max-visits 2",
      },
      {
        transition: OUT_OF_DRAFTS,
        reason: "beyond --max-visits 1: a path takes it with --max-visits 3",
      },
    ]);
  });

  it("is said to have a guard unsatisfiable under the schema when only a ruled-out outcome takes it", async () => {
    const essay = await essayPipeline((yaml) =>
      yaml.replace(
        "    - { when: { path: output.kind, in: [spam] }, to: fail }",
        "    - { when: { path: output.sections, gt: 9 }, to: fail }\n    - { when: { path: output.kind, in: [spam] }, to: fail }",
      ),
    );
    const list = pipelinePaths(essay, { cover: "transitions" });
    expect(list.untaken).toEqual([
      {
        transition:
          "essay.outline -> essay.failed [xstate.done.actor.outline: output.sections gt 9]",
        reason: expect.stringMatching(
          /^guard unsatisfiable under the schema: within --max-visits 5, only outline's outcome "ok: output.sections gt 9, .*" takes it, and no payload the completionSchema accepts makes output.sections gt 9/,
        ),
      },
    ]);
  });
});
