import { describe, expect, it } from "vitest";
import { noPostgres, sharedStores } from "../store/postgres/support/shared-store.js";
import {
  executionProblems,
  queueRuns,
  runsOf,
  until,
  workerProcesses,
} from "../support/worker-fleet.js";

const stores = sharedStores();
const worker = workerProcesses();

/** A lease short enough that runs whose owner lost the store are taken over within the test. */
const FLAGS = ["--concurrency", "2", "--lease-ttl", "1500", "--poll", "50"];

describe.skipIf(noPostgres)("workers whose PostgreSQL server restarts under them", () => {
  it.each(["fast", "immediate"] as const)(
    "%s: live on, say the store was unavailable, and every run ends done, executed once",
    async (mode) => {
      const { url, store } = await stores.fresh();
      const runIds = await queueRuns(store, url, {
        pipeline: "code-review-parallel",
        count: 8,
        delayMs: 80,
      });
      const workers = [worker(url, FLAGS), worker(url, FLAGS), worker(url, FLAGS)];
      let exits = 0;
      for (const each of workers) void each.exited.then(() => exits++);
      // Mid-run: every worker has runs under way when the server goes.
      await until(() => workers.every((each) => runsOf(each).started.length > 0));
      await stores.server().restart(2_000, mode);

      await until(async () => {
        if (exits > 0) return true;
        for (const runId of runIds) {
          const run = await store.getRun(runId).catch(() => undefined);
          if (!run?.ok || run.value.status !== "done") return false;
        }
        return true;
      }, 200);
      expect(
        workers.map((each) => ({ exitCode: each.child.exitCode, stderr: each.stderr() })),
      ).toEqual(workers.map(() => ({ exitCode: null, stderr: expect.any(String) })));
      const lines = workers.flatMap((each) => each.lines);
      expect(lines.some((line) => line.includes("Session/StoreUnavailable"))).toBe(true);
      for (const runId of runIds) {
        const run = await store.getRun(runId);
        expect(run.ok && run.value.status).toBe("done");
        expect({ runId, problems: executionProblems(await store.auditOf(runId)) }).toEqual({
          runId,
          problems: [],
        });
      }
      for (const each of workers) each.child.kill("SIGTERM");
      expect(await Promise.all(workers.map((each) => each.exited))).toEqual(
        workers.map(() => ({ code: 0, signal: null })),
      );
    },
    120_000,
  );
});
