import { deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { snapshotAt } from "../support/stage-snapshots.js";
import { databaseAtSchema, noPostgres, rowsOf, sharedStores } from "./support/shared-store.js";

const stores = sharedStores();

const newRun = {
  runId: "run-1",
  pipelineId: "plan-build",
  definitionHash: "hash-1",
  options: {},
};

const basesOf = async (url: string) =>
  (await rowsOf(url, "SELECT snapshot_base AS base FROM steps ORDER BY step")).map((r) => r.base);

describe.skipIf(noPostgres)("a run's snapshots on the PostgreSQL store", () => {
  it("are stored as patches against the step before, as on SQLite, and read back as committed by any process", async () => {
    const { url, store } = await stores.fresh();
    await store.createRun(newRun);
    const committed = Array.from({ length: 20 }, (_, i) => snapshotAt(i + 1));
    for (const snapshot of committed) await store.commitStep("run-1", { events: [], snapshot });

    expect(await basesOf(url)).toEqual([null, ...committed.slice(1).map(() => 1)]);
    const whole = committed.reduce((sum, each) => sum + JSON.stringify(each).length, 0);
    const [{ stored }] = await rowsOf(
      url,
      "SELECT SUM(length(snapshot))::int AS stored FROM steps",
    );
    expect(stored).toBeLessThan(whole / 4);

    const other = await stores.reopen(url);
    const latest = await other.getSnapshot("run-1");
    expect(latest.ok && latest.value.snapshot).toEqual(committed.at(-1));
    for (const [i, snapshot] of committed.entries())
      expect(await other.snapshotAtStep("run-1", i + 1)).toEqual(snapshot);
  });

  it("take a new keyframe when they drift from it, and in a store that has not committed the run before", async () => {
    const { url, store } = await stores.fresh();
    await store.createRun(newRun);
    await store.commitStep("run-1", { events: [], snapshot: snapshotAt(1, "plan") });
    await store.commitStep("run-1", { events: [], snapshot: snapshotAt(1, "large-stage") });
    await store.commitStep("run-1", { events: [], snapshot: snapshotAt(2, "large-stage") });
    const other = await stores.reopen(url);
    await other.commitStep("run-1", { events: [], snapshot: snapshotAt(3, "large-stage") });
    await other.commitStep("run-1", { events: [], snapshot: snapshotAt(4, "large-stage") });

    expect(await basesOf(url)).toEqual([null, null, 2, null, 4]);
    for (const n of [2, 3, 4])
      expect(await store.snapshotAtStep("run-1", n + 1)).toEqual(snapshotAt(n, "large-stage"));
  });

  it("whose keyframe is damaged read back as Session/SnapshotCorrupt", async () => {
    const { url, store } = await stores.fresh();
    await store.createRun(newRun);
    await store.commitStep("run-1", { events: [], snapshot: snapshotAt(1) });
    await store.commitStep("run-1", { events: [], snapshot: snapshotAt(2) });
    await rowsOf(url, "UPDATE steps SET snapshot = $1 WHERE step = 1", [
      JSON.stringify(snapshotAt(7)),
    ]);

    const latest = await store.getSnapshot("run-1");
    expect(latest.ok ? latest.value : latest.error).toMatchObject({
      code: "Session/SnapshotCorrupt",
      context: { runId: "run-1" },
    });
  });

  it("stored as zlib deltas by an earlier stagechart read back", async () => {
    const { url, store } = await stores.fresh();
    await store.createRun(newRun);
    await store.commitStep("run-1", { events: [], snapshot: snapshotAt(1) });
    await store.commitStep("run-1", { events: [], snapshot: snapshotAt(2) });
    const dictionary = Buffer.from(JSON.stringify(snapshotAt(1)));
    const delta = deflateSync(JSON.stringify(snapshotAt(2)), { dictionary });
    await rowsOf(url, "UPDATE steps SET snapshot = $1, snapshot_base = 1 WHERE step = 2", [
      delta.toString("base64"),
    ]);

    const other = await stores.reopen(url);
    const latest = await other.getSnapshot("run-1");
    expect(latest.ok && latest.value.snapshot).toEqual(snapshotAt(2));
  });

  it("of a database from before deltas (schema 12) read back whole, the next ones stored as patches", async () => {
    const old = await stores.server().createDatabase();
    await databaseAtSchema(old, 12, [
      `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at, definition_hash,
        stagechart_version, options) VALUES
        ('run-1', 'plan-build', 'running', 'then', 'then', 'hash-1', 'old', '{}')`,
      `INSERT INTO steps (run_id, step, last_seq, at, snapshot, definition_hash,
        stagechart_version) VALUES
        ('run-1', 1, 0, 'then', '${JSON.stringify(snapshotAt(1))}', 'hash-1', 'old')`,
    ]);

    const store = await stores.reopen(old);
    const latest = await store.getSnapshot("run-1");
    expect(latest.ok && latest.value.snapshot).toEqual(snapshotAt(1));
    await store.commitStep("run-1", { events: [], snapshot: snapshotAt(2) });
    await store.commitStep("run-1", { events: [], snapshot: snapshotAt(3) });

    expect(await basesOf(old)).toEqual([null, null, 2]);
    for (const n of [1, 2, 3])
      expect(await store.snapshotAtStep("run-1", n)).toEqual(snapshotAt(n));
  });
});
