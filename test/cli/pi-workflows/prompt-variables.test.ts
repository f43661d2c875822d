import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../../src/store/index.js";
import { runCli, summaryOf } from "../../support/cli.js";
import { releaseRoot, releaseSuspendedOnGrant } from "../../support/pi-workflows.js";
import { tempDir } from "../../support/stages.js";

/** A fresh copy of machines/pi-release whose every phase says its `{globalStepCount}`. */
function countingRelease(): string {
  const root = releaseRoot();
  for (const file of [
    "release/build.md",
    "release/publish.md",
    "code-review/static-analysis.md",
    "code-review/manual-review.md",
  ])
    appendFileSync(join(root, file), "\nThis is step {globalStepCount} of the run.\n");
  return root;
}

/** The step each stage execution's prompt said it was, in the order they ran. */
function stepsSaid(store: string, runId: string, executions: readonly string[]): string[] {
  const opened = SqliteStore.open(store);
  if (!opened.ok) throw opened.error;
  try {
    return executions.map((execution) => {
      const system = opened.value.read(`${runId}/${execution}`).find((e) => e.role === "system");
      const step = system?.role === "system" && /This is step (\S+) of the run\./.exec(system.text);
      return `${execution}: ${step ? step[1] : "(no prompt)"}`;
    });
  } finally {
    opened.value.close();
  }
}

describe("{globalStepCount} in a run of a pi-workflows directory", () => {
  it("counts every phase execution of the run, inside the subworkflow and across its loop", async () => {
    const root = countingRelease();
    const store = join(tempDir(), "runs.db");
    const run = await runCli(
      "run",
      join(root, "release"),
      "--task",
      "Ship 1.2",
      "--model",
      `scripted:${join(root, "release.script.yaml")}`,
      "--root",
      tempDir(),
      "--store",
      store,
      "--json",
    );
    expect(run.code).toBe(0);
    const { runId } = summaryOf(run.stdout) as { runId: string };
    expect(
      stepsSaid(store, runId, [
        "build/1",
        "code-review/1/static-analysis/1",
        "code-review/1/manual-review/1",
        "code-review/1/static-analysis/2", // manual-review looped code-review
        "code-review/1/manual-review/2",
        "publish/1",
      ]),
    ).toEqual([
      "build/1: 0",
      "code-review/1/static-analysis/1: 1",
      "code-review/1/manual-review/1: 2",
      "code-review/1/static-analysis/2: 3",
      "code-review/1/manual-review/2: 4",
      "publish/1: 5",
    ]);
  });

  it("goes on counting in a resumed run, from where the stopped one was", async () => {
    const root = countingRelease();
    const store = join(tempDir(), "runs.db");
    const { runId, waiting } = await releaseSuspendedOnGrant(root, tempDir(), store);
    const resumed = await runCli(
      "resume",
      runId,
      "--deny",
      waiting[0]?.proposalId as string,
      "--store",
      store,
      "--json",
    );
    expect(summaryOf(resumed.stdout)).toMatchObject({ status: "done" });
    expect(
      stepsSaid(store, runId, [
        "build/1",
        "code-review/1/static-analysis/1",
        "code-review/1/manual-review/1", // entered by the resumed process
        "publish/1",
      ]),
    ).toEqual([
      "build/1: 0",
      "code-review/1/static-analysis/1: 1",
      "code-review/1/manual-review/1: 2",
      "publish/1: 3",
    ]);
  });
});
