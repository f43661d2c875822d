import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/index.js";
import { mutationScore, pipelinePaths } from "../../src/testing/index.js";
import { readFixtureFile } from "../../src/testing/path-file.js";
import { essayPipeline } from "../support/essay-pipeline.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

const POLICY_CHANGED = "polish's group (all-settled, joining at publish) under fail-fast";

describe("the mutation score of a pipeline's paths", () => {
  it("catches every mutant of the essay that changes behaviour, and reports those that do not as equivalent", async () => {
    const essay = await essayPipeline();
    const report = await mutationScore(essay, { mutants: 40, timeoutMs: 10_000 });
    expect(report.paths.failing).toEqual([]);
    expect(report.mutants).toHaveLength(40);
    expect(report.caught + report.survived + report.equivalent).toBe(40);
    expect(report.score).toBeGreaterThanOrEqual(0.95);
    for (const mutant of report.mutants.filter((m) => m.status === "caught"))
      expect(mutant.caughtBy?.reason, mutant.description).toBeTruthy();
    // Dropping the last rule, `otherwise → fail`, leaves draft failing as before: no rule holds.
    const all = await mutationScore(essay, { mutants: 1_000, timeoutMs: 10_000 });
    expect(
      all.mutants.find((m) => m.description === "draft rule 4 (otherwise → fail) dropped"),
    ).toMatchObject({
      status: "equivalent",
      equivalence: "it routes every result alike",
    });
  });

  it("reports a mutant the paths that cover transitions miss as a survivor, saying what it does otherwise; the boundaries catch it", async () => {
    const essay = await essayPipeline();
    const byTransitions = await mutationScore(essay, {
      mutants: 1_000,
      paths: pipelinePaths(essay, { cover: "transitions" }),
      timeoutMs: 10_000,
    });
    expect(byTransitions.mutants.find((m) => m.description === POLICY_CHANGED)).toMatchObject({
      status: "survived",
      difference: "the group after polish, 0 of 2 siblings ok and 1 not: fail, not waits",
    });
    const byBoundaries = await mutationScore(essay, { mutants: 1_000, timeoutMs: 10_000 });
    expect(byBoundaries.mutants.find((m) => m.description === POLICY_CHANGED)).toMatchObject({
      status: "caught",
    });
    expect(byBoundaries.survived).toBe(0);
  });

  it("counts as equivalent a mutant that differs only where no run goes, and as caught one that differs where a run goes", async () => {
    // outline is never entered twice: its visits bound is never reached.
    const essay = await essayPipeline((yaml) =>
      yaml.replace(
        "    - { when: { path: output.kind, in: [spam] }, to: fail }",
        "    - { when: { visits: outline, gt: 1 }, to: fail }\n    - { when: { path: output.kind, in: [spam] }, to: fail }",
      ),
    );
    const report = await mutationScore(essay, { mutants: 1_000, timeoutMs: 10_000 });
    const moved = (to: number) =>
      report.mutants.find((m) =>
        m.description.endsWith(`visits outline gt 1 becomes visits outline gt ${to}`),
      );
    expect(moved(2)).toMatchObject({
      status: "equivalent",
      equivalence: expect.stringMatching(
        /^it differs only where no run goes within --max-visits 3 \(outline ending .* with visits outline 2: goes to draft, not fail\)$/,
      ),
    });
    expect(moved(0)).toMatchObject({ status: "caught" });
  });

  it("catches at least 95 % of arena-debate's mutants that change behaviour, every one after its aggregate included, with its bundled fixtures", async () => {
    const loaded = await loadPipelineFile(join(MACHINES_DIR, "arena-debate.yaml"));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const fixtures = await readFixtureFile(
      join(MACHINES_DIR, "arena-debate.fixtures.json"),
      loaded.value,
    );
    if (!fixtures.ok) throw fixtures.error;
    const report = await mutationScore(loaded.value, {
      mutants: 1_000,
      fixtures: fixtures.value,
      timeoutMs: 10_000,
    });
    expect(report.paths.failing).toEqual([]);
    expect(report.caught + report.survived + report.equivalent).toBe(report.mutants.length);
    expect(report.score).toBeGreaterThanOrEqual(0.95);
    // The mutants of the rules after aggregate are caught, by paths that reach them.
    for (const stage of ["aggregate", "decide", "sandbox", "store-memory", "audit"])
      expect(
        report.mutants.filter((m) => m.stage === stage && m.status !== "caught"),
        stage,
      ).toEqual([]);
    for (const mutant of report.mutants.filter((m) => m.status === "equivalent"))
      expect(mutant.equivalence, mutant.description).toBeTruthy();
  }, 60_000);
});
