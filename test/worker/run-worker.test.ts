import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import type { RunStore } from "../../src/runtime/store-port.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { noPostgres, sharedStores } from "../store/postgres/support/shared-store.js";
import { queueRuns, until, workerPools } from "../support/worker-fleet.js";

const stores = sharedStores();
const worker = workerPools();

/** The store with its calls of `name` passed through `around` (a worker that dies there, …). */
function intercepted<K extends keyof RunStore>(
  store: RunStore,
  name: K,
  around: RunStore[K],
): RunStore {
  return new Proxy(store, {
    get: (target, key) => {
      if (key === name) return around;
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Another machine's store, whose clock is an hour ahead: every lease held now has expired. */
const anHourLater = async (url: string) => {
  const opened = await PostgresStore.open(url, { poolSize: 2, now: () => Date.now() + 3_600_000 });
  if (!opened.ok) throw opened.error;
  return opened.value;
};

const statusOf = async (store: RunStore, runId: string) => {
  const run = await store.getRun(runId);
  return run.ok ? run.value.status : run.error.code;
};

/** `store` with each claim's answer (a run id, or undefined for none) kept in `claims`. */
function countingClaims(store: PostgresStore) {
  const claims: (string | undefined)[] = [];
  const counted = intercepted(store, "claimRun", async (...args) => {
    const claimed = await store.claimRun(...args);
    claims.push(claimed?.runId);
    return claimed;
  });
  return { claims, counted };
}

describe.skipIf(noPostgres)("stagechart worker (runWorker) on a PostgreSQL store", () => {
  it("gives a stopped run back in one step: killed just before it, the run is still taken over", async () => {
    const { url, store } = await stores.fresh();
    const [runId] = await queueRuns(store, url, {
      pipeline: "code-review",
      count: 1,
      delayMs: 200,
    });
    if (!runId) throw new Error("no run queued");
    // The worker dies as it would give the stopped run back: that call never reaches the store.
    const dying = intercepted(store, "requeueRun", async () => {
      throw new Error("killed");
    });
    const { pool, events } = worker({ store: dying, stopGraceMs: 0 });
    await until(() => events.some((event) => event.kind === "started"));
    await pool.stop();

    expect(await statusOf(store, runId)).not.toBe("suspended");
    const later = await anHourLater(url);
    try {
      expect((await later.claimRun("another-worker", 60_000))?.runId).toBe(runId);
    } finally {
      await later.close();
    }
  });

  it("fails a run whose stored bundle cannot be written out, audited with its code: no worker takes it again", async () => {
    const { store } = await stores.fresh();
    // A file that is also a folder of the bundle: no machine can write it out.
    await store.saveDefinition("clashing-bundle", {
      entry: "machines/p.yaml",
      files: { "machines/p.yaml": "id: p\n", "machines/p.yaml/stage.md": "Plan.\n" },
    });
    const queued = await store.enqueueRun({
      runId: "clash-1",
      pipelineId: "p",
      definitionHash: "clashing-bundle",
      options: {},
    });
    if (!queued.ok) throw queued.error;

    const { pool, events } = worker({ store, untilIdle: true });
    await pool.done;
    expect(events).toMatchObject([
      { kind: "refused", runId: "clash-1", error: { code: "Validation/DefinitionPathClash" } },
    ]);
    expect(await store.getRun("clash-1")).toMatchObject({
      value: { status: "failed", error: { code: "Validation/DefinitionPathClash" } },
    });
    expect(await store.auditOf("clash-1")).toMatchObject([
      {
        type: "RunFailed",
        payload: { status: "failed", error: { code: "Validation/DefinitionPathClash" } },
      },
    ]);
    expect(await store.leaseHolder("clash-1")).toBeUndefined();
    expect(await store.claimRun("another-worker", 60_000)).toBeUndefined();
  });

  it("gives a run back when this worker cannot write its definitions cache, and says why", async () => {
    const { url, store } = await stores.fresh();
    const [runId] = await queueRuns(store, url, { pipeline: "code-review", count: 1, delayMs: 0 });
    if (!runId) throw new Error("no run queued");
    // The cache is a file here: nothing can be written under it.
    const cacheDir = join(mkdtempSync(join(tmpdir(), "stagechart-bad-cache-")), "file");
    writeFileSync(cacheDir, "not a folder");

    const broken = worker({ store, cacheDir, untilIdle: true });
    await broken.pool.done;
    expect(broken.events).toMatchObject([
      {
        kind: "refused",
        runId,
        error: { code: "Session/DefinitionCacheUnavailable", context: { cacheDir } },
      },
    ]);
    expect(await statusOf(store, runId)).toBe("queued");
    expect(await store.leaseHolder(runId)).toBeUndefined();
    expect(await store.auditOf(runId)).toEqual([]);

    const healthy = worker({ store, untilIdle: true });
    await healthy.pool.done;
    expect(healthy.events).toMatchObject([
      { kind: "started", runId },
      { kind: "finished", runId, outcome: { status: "done" } },
    ]);
  }, 30_000);

  it("wakes at once when a run is queued, however long its poll (LISTEN/NOTIFY)", async () => {
    const { url, store } = await stores.fresh();
    const { claims, counted } = countingClaims(store);
    const { events } = worker({ store: counted, pollMs: 60_000 });
    // Its first look finds nothing: it waits a minute before the next, unless told.
    await until(() => claims.length === 1);

    const [runId] = await queueRuns(store, url, { pipeline: "code-review", count: 1, delayMs: 0 });
    await until(() => events.some((event) => event.kind === "finished"));
    expect(claims.slice(0, 2)).toEqual([undefined, runId]);
    expect(events).toMatchObject([
      { kind: "started", runId },
      { kind: "finished", runId, outcome: { status: "done" } },
    ]);
  }, 20_000);

  it("listens again once its LISTEN connection drops, and is woken as before", async () => {
    const { url, store } = await stores.fresh();
    const { claims, counted } = countingClaims(store);
    worker({ store: counted, pollMs: 60_000 });
    await until(() => claims.length === 1);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const listeners = async () =>
        (
          await admin.query(
            `SELECT pid FROM pg_stat_activity
             WHERE datname = current_database() AND query = 'LISTEN stagechart_queue'`,
          )
        ).rows.map((row) => row.pid as number);
      const [first] = await listeners();
      await admin.query("SELECT pg_terminate_backend($1)", [first]);
      await until(async () => (await listeners()).some((pid) => pid !== first), 100);
    } finally {
      await admin.end();
    }

    const [runId] = await queueRuns(store, url, { pipeline: "code-review", count: 1, delayMs: 0 });
    await until(() => claims.includes(runId));
    expect(claims.slice(0, 2)).toEqual([undefined, runId]);
  }, 20_000);
});
