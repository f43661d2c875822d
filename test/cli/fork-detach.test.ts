import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import type { WorkerPool } from "../../src/store/postgres/worker-pool.js";
import { runWorker, type WorkerEvent } from "../../src/worker/run-worker.js";
import { DECIDING } from "../support/ask-pipelines.js";
import { demoProject, runCli, summaryOf } from "../support/cli.js";
import { noPostgres, testPostgres } from "../support/postgres.js";
import { tempDir } from "../support/stages.js";
import { until } from "../support/worker-fleet.js";

// `fork --detach` beyond what test/cli/fork.test.ts shows on either store: the drift it refuses,
// and the worker it wakes.

const postgres = testPostgres();
afterEach(() => {
  delete process.env.XDG_CACHE_HOME;
});

/** A finished code-review run `r1` of a fresh demo project on the store `spec`. */
async function finishedRunOn(spec: string): Promise<void> {
  const project = demoProject();
  const run = await runCli(
    ...["run", "code-review", "--task", "refactor auth module", "--root", project],
    ...["--store", spec, "--headless", "--run-id", "r1", "--json"],
  );
  expect(run.code).toBe(0);
}

describe("stagechart fork --detach of a pipeline changed since", () => {
  it("is Session/DefinitionDrift, queueing nothing: a worker runs the stored definition only", async () => {
    const dir = tempDir();
    const pipeline = join(dir, "deciding.yaml");
    writeFileSync(pipeline, DECIDING);
    writeFileSync(join(dir, "deciding.script.yaml"), "stages: {}\n");
    const common = ["--store", join(dir, "runs.db"), "--headless", "--json"];
    const run = await runCli("run", pipeline, "--root", dir, "--run-id", "d1", ...common);
    expect(summaryOf(run.stdout)).toMatchObject({ status: "suspended" });
    writeFileSync(pipeline, DECIDING.replace("Accept the change?", "Accept it?"));
    const detached = await runCli(
      "fork",
      "d1",
      "--at",
      "1",
      "--run-id",
      "d2",
      "--detach",
      ...common,
    );
    expect(detached.code).toBe(1);
    expect(summaryOf(detached.stdout)).toMatchObject({
      error: { code: "Session/DefinitionDrift" },
    });
    const shown = await runCli("show", "d2", "--store", join(dir, "runs.db"), "--json");
    expect(summaryOf(shown.stdout)).toMatchObject({ error: { code: "Session/RunNotFound" } });
  });
});

describe("stagechart fork --detach on PostgreSQL", () => {
  const pools: WorkerPool[] = [];
  const stores: PostgresStore[] = [];
  afterEach(async () => {
    for (const pool of pools.splice(0)) await pool.stop();
    for (const store of stores.splice(0)) await store.close();
  }, 30_000);

  it.skipIf(noPostgres)(
    "wakes an idle worker at once, however long its poll (NOTIFY)",
    async () => {
      const spec = await postgres().createDatabase();
      await finishedRunOn(spec);
      process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), "stagechart-worker-cache-"));
      const opened = await PostgresStore.open(spec);
      if (!opened.ok) throw opened.error;
      const store = opened.value;
      stores.push(store);
      const claims: (string | undefined)[] = [];
      const events: WorkerEvent[] = [];
      const counted = new Proxy(store, {
        get: (target, key) => {
          if (key === "claimRun")
            return async (...args: Parameters<PostgresStore["claimRun"]>) => {
              const claimed = await target.claimRun(...args);
              claims.push(claimed?.runId);
              return claimed;
            };
          const value = Reflect.get(target, key, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      pools.push(runWorker({ store: counted, pollMs: 600_000, onEvent: (e) => events.push(e) }));
      // Its first look finds nothing: it waits ten minutes before the next, unless told.
      await until(() => claims.length === 1);

      const detached = await runCli(
        ...["fork", "r1", "--at", "1", "--run-id", "f2", "--detach", "--store", spec],
      );
      expect(detached.code).toBe(0);
      await until(() => events.some((event) => event.kind === "finished"));
      expect(claims.slice(0, 2)).toEqual([undefined, "f2"]);
      expect(events).toMatchObject([
        { kind: "started", runId: "f2" },
        { kind: "finished", runId: "f2", outcome: { status: "done" } },
      ]);
    },
    60_000,
  );
});
