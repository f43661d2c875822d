import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../../support/cli.js";
import { releaseRoot } from "../../support/pi-workflows.js";

/**
 * graph, paths and test look at a workflow directory without starting a run of it, so they take
 * a subworkflow-only one (`show: workflows`) too; only `run` refuses it.
 */
describe("stagechart graph | paths | test <pi-workflows directory>", () => {
  it("draws, lists and drives a show: workflows subworkflow on its own", async () => {
    const codeReview = join(releaseRoot(), "code-review");
    const graph = await runCli("graph", codeReview, "--format", "mermaid");
    expect(graph.stderr).toBe("");
    expect(graph.code).toBe(0);
    expect(graph.stdout).toMatch(/static_analysis --> s_code_review_manual_review/);
    const paths = await runCli("paths", codeReview);
    expect(paths.code).toBe(0);
    expect(paths.stdout).toMatch(/\(done\): static-analysis: ok: output\.action equals "next"/);
    const test = await runCli("test", codeReview);
    expect(test.stdout).not.toMatch(/FAIL/);
    expect(test.code).toBe(0);
  });

  it("still refuses to run one", async () => {
    const run = await runCli("run", join(releaseRoot(), "code-review"), "--task", "Review");
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/Validation\/WorkflowNotRunnable/);
  });

  it("drives paths taking every transition of release, a two-step cancel inside code-review included", async () => {
    const test = await runCli("test", join(releaseRoot(), "release"));
    expect(test.stdout).not.toMatch(/FAIL/);
    expect(test.stdout).toMatch(/9 passed, 0 failed; 9\/9 transitions covered/);
    expect(test.code).toBe(0);
  });
});
