import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { demoProject, runCli, summaryOf } from "../support/cli.js";
import { slowCodeReview } from "../support/slow-runs.js";

describe("a store whose WAL was deleted after its run was killed", () => {
  it("runs, show and resume say what was lost; resume --force goes on from what is left", async () => {
    const project = demoProject();
    const path = join(project, "s.db");
    const run = slowCodeReview(project, path, { delayMs: 300, runId: "lost" });
    await run.printed("execute started");
    run.child.kill("SIGKILL");
    await run.exited;
    for (const file of [`${path}-wal`, `${path}-shm`]) rmSync(file);

    const damaged =
      /Session\/StoreDamaged: run lost had committed \d+ step\(s\) \(audit seq \d+\), but the store holds none of them: they were lost with the write-ahead log/;
    const runs = await runCli("runs", "--store", path);
    expect(runs.code).toBe(0);
    expect(runs.stdout).toMatch(/^lost {2}running/m);
    expect(runs.stderr).toMatch(new RegExp(`warning: ${damaged.source}`));

    const show = await runCli("show", "lost", "--store", path);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("run lost · code-review · running");
    expect(show.stderr).toMatch(damaged);

    const resume = await runCli("resume", "lost", "--store", path, "--headless", "--json");
    expect(resume.code).toBe(1);
    expect(summaryOf(resume.stdout)).toMatchObject({
      runId: "lost",
      status: "running",
      error: { code: "Session/StoreDamaged", context: { runExists: true, storedSteps: 0 } },
    });

    const forced = await runCli(
      ...["resume", "lost", "--store", path, "--force", "--headless", "--json"],
    );
    expect(forced.stderr).toMatch(damaged);
    expect(summaryOf(forced.stdout)).toMatchObject({ runId: "lost", status: "done" });
    expect((await runCli("runs", "--store", path)).stderr).not.toContain("StoreDamaged");
  }, 60_000);
});
