import { afterEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/index.js";
import { demoProject, runCli } from "../support/cli.js";
import { noPostgres, testPostgres } from "../support/postgres.js";

const skip = noPostgres;
const postgres = testPostgres();
afterEach(() => {
  delete process.env.STAGECHART_STORE;
});

/** Everything a command showed, which must never hold the store's password. */
const shown = (run: { stdout: string; stderr: string }) => `${run.stdout}\n${run.stderr}`;

describe.skipIf(skip)("the CLI on a PostgreSQL store", () => {
  it("queues a run with run --detach, and runs, show and audit read it from the database", async () => {
    const url = await postgres().createDatabase();
    const project = demoProject();
    const detached = await runCli(
      ...["run", "code-review", "--task", "Add auth", "--detach"],
      ...["--root", project, "--store", url],
    );
    expect(detached.code).toBe(0);
    const runId = detached.stdout.trim();

    const listed = await runCli("runs", "--store", url);
    expect(listed.stdout).toMatch(new RegExp(`${runId}\\s+queued\\s+code-review`));
    const shownRun = await runCli("show", runId, "--store", url, "--json");
    expect(JSON.parse(shownRun.stdout)).toMatchObject({ runId, status: "queued" });
    expect((await runCli("audit", runId, "--store", url)).code).toBe(0);
    for (const run of [detached, listed, shownRun])
      expect(shown(run)).not.toContain(postgres().password);

    // A worker on another machine finds the definition the run was queued with.
    const opened = await PostgresStore.open(url);
    if (!opened.ok) throw opened.error;
    try {
      const run = await opened.value.getRun(runId);
      if (!run.ok) throw run.error;
      expect(JSON.stringify(run.value)).not.toContain(postgres().password);
      const bundle = await opened.value.loadDefinition(run.value.definitionHash);
      expect(bundle.ok && bundle.value.entry).toBe("machines/code-review.yaml");
    } finally {
      await opened.value.close();
    }
  });

  it("cancels a queued run in place; a run a worker took is asked of that worker", async () => {
    const url = await postgres().createDatabase();
    const detach = () => runCli("run", "code-review", "--task", "x", "--detach", "--store", url);
    const queued = (await detach()).stdout.trim();
    const taken = (await detach()).stdout.trim();
    const cancelled = await runCli("cancel", queued, "--store", url, "--json");
    expect(cancelled.code).toBe(0);
    expect(JSON.parse(cancelled.stdout)).toEqual({ runId: queued, status: "cancelled" });

    const opened = await PostgresStore.open(url);
    if (!opened.ok) throw opened.error;
    try {
      expect((await opened.value.claimRun("worker-1", 60_000))?.runId).toBe(taken);
    } finally {
      await opened.value.close();
    }
    // The worker holding its lease never answers here: the request times out and is withdrawn.
    const refused = await runCli("cancel", taken, "--store", url, "--timeout", "0.3");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("Session/ControlTimeout");
    const still = await runCli("show", taken, "--store", url, "--json");
    expect(JSON.parse(still.stdout)).toMatchObject({ runId: taken, status: "running" });
    expect((await runCli("cancel", "run-none", "--store", url)).stderr).toContain(
      "Session/RunNotFound",
    );
  });

  it("lists a run's committed steps with history", async () => {
    const url = await postgres().createDatabase();
    const opened = await PostgresStore.open(url);
    if (!opened.ok) throw opened.error;
    try {
      const store = opened.value;
      const run = { runId: "run-1", pipelineId: "plan-build", definitionHash: "h", options: {} };
      await store.createRun(run);
      await store.commitStep("run-1", {
        events: [{ type: "RunStarted", runId: "run-1", payload: {} }],
        snapshot: { value: "plan" },
      });
      await store.commitStep("run-1", { events: [], snapshot: { value: "build" } });
    } finally {
      await opened.value.close();
    }
    const listed = await runCli("history", "run-1", "--store", url, "--json");
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([
      { step: 1, seq: { from: 1, to: 1 }, state: "plan" },
      { step: 2, seq: null, state: "build" },
    ]);
  });

  it("takes the store from STAGECHART_STORE when --store is not given", async () => {
    const url = await postgres().createDatabase();
    process.env.STAGECHART_STORE = url;
    const detached = await runCli("run", "code-review", "--task", "Add auth", "--detach");
    expect(detached.code).toBe(0);
    const listed = await runCli("runs", "--json");
    expect(JSON.parse(listed.stdout)).toMatchObject([
      { runId: detached.stdout.trim(), status: "queued" },
    ]);
  });

  it("names a store that refuses the password without the password, exit 1, no stack", async () => {
    const url = await postgres().createDatabase();
    const wrong = "not-the-password-4711";
    const refused = await runCli("runs", "--store", url.replace(postgres().password, wrong));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^Session\/StoreUnavailable: .*stagechart@127\.0\.0\.1/);
    expect(shown(refused)).not.toContain(wrong);
    expect(shown(refused)).not.toContain(postgres().password);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
  });

  it("says a database that cannot be reached is unavailable, exit 1", async () => {
    const unreachable = `postgres://stagechart:${postgres().password}@127.0.0.1:1/nowhere`;
    const detached = await runCli(
      "run",
      "code-review",
      "--task",
      "x",
      "--detach",
      "--store",
      unreachable,
    );
    expect(detached.code).toBe(1);
    expect(detached.stderr).toContain("Session/StoreUnavailable");
    expect(shown(detached)).not.toContain(postgres().password);
    expect(detached.stderr).not.toMatch(/\n\s+at /);
  });
});
