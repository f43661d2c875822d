import pg from "pg";
import { describe, expect, it } from "vitest";
import { until } from "../../support/worker-fleet.js";
import { noPostgres, sharedStores } from "./support/shared-store.js";

const stores = sharedStores();

/** The backends of the database at `url` waiting on a lock another transaction holds. */
async function waitingOnLocks(admin: pg.Client): Promise<number> {
  const { rows } = await admin.query(
    `SELECT count(*)::int AS waiting FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return rows[0].waiting;
}

describe.skipIf(noPostgres)("a run's lease on the shared store", () => {
  it("taken while a worker's claim holds the run, waits for the claim and is refused: no deadlock", async () => {
    const { url, store } = await stores.fresh();
    const queued = await store.enqueueRun({
      runId: "run-1",
      pipelineId: "plan-build",
      definitionHash: "hash-1",
      options: {},
    });
    if (!queued.ok) throw queued.error;
    const worker = new pg.Client({ connectionString: url });
    const admin = new pg.Client({ connectionString: url });
    await worker.connect();
    await admin.connect();
    try {
      // A worker's claim, step by step as claimRun takes them: the run's row, then its lease.
      await worker.query("BEGIN");
      await worker.query("SELECT run_id FROM runs WHERE run_id = 'run-1' FOR UPDATE");
      // Meanwhile `resume` of the queued run takes its lease (OwnedRun.open), and has to wait.
      const resuming = store.acquireLease("run-1", "cli-resume", 60_000);
      await until(async () => (await waitingOnLocks(admin)) === 1);
      await worker.query(
        `INSERT INTO leases (run_id, owner, expires_at) VALUES ('run-1', 'worker-a', $1)
         ON CONFLICT (run_id) DO NOTHING`,
        [Date.now() + 60_000],
      );
      await worker.query("UPDATE runs SET status = 'running' WHERE run_id = 'run-1'");
      await worker.query("COMMIT");

      expect(await resuming).toMatchObject({
        ok: false,
        error: { code: "Session/RunLocked", context: { owner: "worker-a" } },
      });
    } finally {
      await worker.end();
      await admin.end();
    }
  });
});
