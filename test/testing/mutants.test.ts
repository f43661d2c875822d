import { describe, expect, it } from "vitest";
import { MUTATION_KINDS, mutantsOf } from "../../src/testing/mutants.js";
import { essayPipeline } from "../support/essay-pipeline.js";

describe("seeded mutants of a pipeline's rules", () => {
  it("are the same for the same seed and others for another, none made twice", async () => {
    const essay = await essayPipeline();
    const described = (seed: number) => mutantsOf(essay, 12, seed).map((m) => m.description);
    expect(described(7)).toEqual(described(7));
    expect(described(8)).not.toEqual(described(7));
    const all = mutantsOf(essay, 10_000).map((m) => m.description);
    expect(new Set(all).size).toBe(all.length);
    expect(mutantsOf(essay, 12)).toHaveLength(12);
  });

  it("swap a target, drop a rule, negate a condition, move a threshold or a visits bound, change a policy or a join", async () => {
    const essay = await essayPipeline();
    const all = mutantsOf(essay, 10_000);
    expect(new Set(all.map((m) => m.kind))).toEqual(new Set(MUTATION_KINDS));
    const descriptions = all.map((m) => m.description);
    expect(descriptions).toEqual(
      expect.arrayContaining([
        "outline rule 2 (otherwise → draft) goes to publish",
        "draft rule 3 (visits draft lt 3 → draft) dropped",
        'outline rule 1 (output.kind in ["spam"] → fail) negated',
        "draft rule 2 (output.score gte 7 → polish): output.score gte 7 becomes output.score gte 8",
        "draft rule 3 (visits draft lt 3 → draft): visits draft lt 3 becomes visits draft lt 2",
        "polish's group (all-settled, joining at publish) under fail-fast",
        "polish's group (all-settled, joining at publish) joins at draft",
      ]),
    );
    // Each mutant changes only its stage's transition, in a copy.
    const shifted = all.find((m) => m.description.endsWith("visits draft lt 2"));
    expect(shifted?.pipeline.next.draft).not.toEqual(essay.next.draft);
    expect(shifted?.pipeline.next.outline).toBe(essay.next.outline);
    expect(essay.next.draft).toEqual((await essayPipeline()).next.draft);
  });
});
