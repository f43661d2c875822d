import { describe, expect, it } from "vitest";
import { demoProject, runPipelineIn, storeCommand } from "../support/cli.js";

/** A demo project with finished code-review runs `r1`, then `r2`. */
async function twoFinishedRuns(): Promise<string> {
  const project = demoProject();
  for (const runId of ["r1", "r2"]) {
    const run = await runPipelineIn(
      project,
      "code-review",
      "refactor auth module",
      "--headless",
      "--run-id",
      runId,
      "--json",
    );
    expect(run.code).toBe(0);
  }
  return project;
}

const runIds = async (project: string): Promise<string[]> =>
  JSON.parse((await storeCommand(project, "runs", "--json")).stdout).map(
    (run: { runId: string }) => run.runId,
  );

describe("stagechart prune", () => {
  it("lists what a dry run would take, then prunes it, reporting the bytes freed", async () => {
    const project = await twoFinishedRuns();
    const dry = await storeCommand(project, "prune", "--keep", "1", "--dry-run");
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      /^would prune 1 run, freeing about [\d.]+ KiB \(their rows' sizes\)\n {2}r1 {2}done {2}code-review {2}ended \S+ {2}\d+ steps/,
    );
    expect(await runIds(project)).toEqual(["r2", "r1"]);

    const real = await storeCommand(project, "prune", "--keep", "1", "--json");
    expect(real.code).toBe(0);
    const report = JSON.parse(real.stdout);
    expect(report).toMatchObject({ scope: "runs", dryRun: false, batches: 1, pruneId: 1 });
    expect(report.runs.map((run: { runId: string }) => run.runId)).toEqual(["r1"]);
    expect(report.bytesFreed).toBeGreaterThan(1024);
    expect(await runIds(project)).toEqual(["r2"]);
    const gone = await storeCommand(project, "show", "r1");
    expect(gone.stderr).toContain("Session/RunNotFound");
  });

  it("cuts a run's step history with --history-only, keeping its audit log", async () => {
    const project = await twoFinishedRuns();
    const audit = (await storeCommand(project, "audit", "r2", "--json")).stdout;
    const cut = await storeCommand(project, "prune", "--keep", "0", "--history-only");
    expect(cut.code).toBe(0);
    expect(cut.stdout).toMatch(
      /^pruned the step history of 2 runs in 1 batch: [\d.]+ (KiB|B) freed \(prune 1\)/,
    );
    expect(await runIds(project)).toEqual(["r2", "r1"]);
    expect((await storeCommand(project, "audit", "r2", "--json")).stdout).toBe(audit);
  });

  it("refuses options that select nothing or do not read, with a code", async () => {
    const project = await twoFinishedRuns();
    for (const flags of [[], ["--ended-before", "yesterday"], ["--keep", "some"]]) {
      const refused = await storeCommand(project, "prune", ...flags);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^Validation\/PruneCriteriaInvalid: /);
    }
    expect(await runIds(project)).toEqual(["r2", "r1"]);
  });
});
