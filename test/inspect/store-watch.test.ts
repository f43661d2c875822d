import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { WebSocket } from "ws";
import { answerApi, apiRoutes } from "../../src/inspect/api-router.js";
import { LiveRegistry } from "../../src/inspect/live.js";
import type { RunChanges } from "../../src/inspect/run-changes.js";
import { FULL_LOOK_EVERY, RUN_LIST_LIMIT, StoreWatch } from "../../src/inspect/store-watch.js";
import type { RunQuery, RunSummary } from "../../src/runtime/run-records.js";
import type { RunStore } from "../../src/runtime/store-port.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { noPostgres, testPostgres } from "../support/postgres.js";

type Clock = () => number;
type Opener = (now: Clock) => Promise<RunStore>;

const openSqlite: Opener = async (now) => {
  const dir = mkdtempSync(join(tmpdir(), "store-watch-"));
  const opened = SqliteStore.open(join(dir, "runs.db"), { now });
  if (!opened.ok) throw opened.error;
  return opened.value;
};

const postgres = testPostgres();
const openPostgres: Opener = async (now) => {
  const opened = await PostgresStore.open(await postgres().createDatabase(), { now });
  if (!opened.ok) throw opened.error;
  stores.push(opened.value);
  return opened.value;
};
const stores: PostgresStore[] = [];
afterAll(async () => {
  for (const store of stores.splice(0)) await store.close();
});

/** A store of `runs` runs, counting the run rows each listRuns call reads. */
async function countingStore(runs: number, open: Opener = openSqlite) {
  let time = Date.parse("2030-01-01T00:00:00.000Z");
  const store = await open(() => time);
  const rowsRead: number[] = [];
  const listRuns = store.listRuns.bind(store);
  store.listRuns = async (query?: RunQuery) => {
    const rows = await listRuns(query);
    rowsRead.push(rows.length);
    return rows;
  };
  for (let i = 1; i <= runs; i++) {
    const id = `run-${String(i).padStart(4, "0")}`;
    const run = await store.createRun({
      runId: id,
      pipelineId: "p",
      definitionHash: "h",
      options: {},
    });
    if (!run.ok) throw run.error;
  }
  return {
    store,
    rowsRead,
    later: () => {
      time += 1000;
    },
  };
}

/** A page as the watch sees it: open, keeping what it is sent. */
function fakePage() {
  const sent: unknown[] = [];
  const page = { OPEN: 1, readyState: 1, send: (text: string) => sent.push(JSON.parse(text)) };
  return { page: page as unknown as WebSocket, sent };
}

function watchOver(store: RunStore, onRunsChanged?: (changes: RunChanges) => Promise<void>) {
  const broadcasts: { type: string; runs: RunSummary[] }[] = [];
  const watch = new StoreWatch(
    async () => store,
    (message) => broadcasts.push(message as (typeof broadcasts)[number]),
    onRunsChanged,
  );
  return { watch, broadcasts };
}

const started = (runId: string) => ({
  snapshot: { at: "plan" },
  events: [{ type: "RunStarted" as const, runId, payload: {} }],
});

describe("the inspect server's store watch", () => {
  it("keeps one watch per page: a page that watches another run drops its earlier watch", async () => {
    const { store } = await countingStore(3);
    const { watch } = watchOver(store);
    const { page } = fakePage();
    for (const runId of ["run-0001", "run-0002", "run-0003"]) await watch.watch(page, runId, 0);
    expect(watch.watchCount).toBe(1);

    await store.commitStep("run-0001", {
      snapshot: { at: "plan" },
      events: [{ type: "RunStarted", runId: "run-0001", payload: {} }],
    });
    await store.commitStep("run-0003", {
      snapshot: { at: "plan" },
      events: [{ type: "RunStarted", runId: "run-0003", payload: {} }],
    });
    const { page: other, sent } = fakePage();
    await Promise.all([watch.watch(other, "run-0001", 0), watch.watch(other, "run-0003", 0)]);
    await watch.poll();
    expect(watch.watchCount).toBe(2);
    expect(sent).toMatchObject([{ type: "audit", runId: "run-0003" }]);

    watch.unwatchAll(page);
    watch.unwatchAll(other);
    expect(watch.watchCount).toBe(0);
  });

  it("tells onRunsChanged what each look found changed, the first look as the baseline, from the one listing the pages get", async () => {
    const { store, rowsRead, later } = await countingStore(3);
    const told: { runs: string[]; first: boolean }[] = [];
    const { watch, broadcasts } = watchOver(store, async ({ runs, first }) => {
      told.push({ runs: runs.map((run) => run.runId), first });
    });
    await watch.poll();
    expect(told).toEqual([{ runs: ["run-0003", "run-0002", "run-0001"], first: true }]);

    later();
    await store.commitStep("run-0002", started("run-0002"));
    await watch.poll();
    await watch.poll();
    expect(told.slice(1)).toEqual([{ runs: ["run-0002"], first: false }]);
    expect(broadcasts.at(-1)?.runs.map((run) => run.runId)).toEqual(["run-0002"]);
    expect(rowsRead).toHaveLength(3);
  });

  it("sends the pages their news when onRunsChanged fails", async () => {
    const { store, later } = await countingStore(1);
    const { watch, broadcasts } = watchOver(store, async () => {
      throw new Error("a listener that fails");
    });
    const { page, sent } = fakePage();
    await watch.watch(page, "run-0001", 0);
    await watch.poll();

    later();
    await store.commitStep("run-0001", started("run-0001"));
    await watch.poll();
    expect(broadcasts).toHaveLength(2);
    expect(sent).toMatchObject([{ type: "audit", runId: "run-0001" }]);
  });

  it("answers GET /api/v1/runs with the newest runs only (as many as the page is sent)", async () => {
    const { store } = await countingStore(RUN_LIST_LIMIT + 5);
    const reply = await answerApi(
      {
        store: async () => store,
        live: new LiveRegistry(() => {}),
        control: async () => undefined,
        resumesRuns: false,
      },
      apiRoutes(),
      { method: "GET", parts: ["runs"], query: new URLSearchParams(), headers: {}, text: "" },
    );
    const runs = reply.body as RunSummary[];
    expect(runs).toHaveLength(RUN_LIST_LIMIT);
    expect(runs[0]?.runId).toBe(`run-0${RUN_LIST_LIMIT + 5}`);
  });
});

describe.each([
  { kind: "SQLite", open: openSqlite, skip: false },
  { kind: "PostgreSQL", open: openPostgres, skip: noPostgres },
])("the store watch's reads on $kind", ({ open, skip }) => {
  if (skip) return;
  it("reads no run rows and sends nothing on a look after which nothing changed, with 1,000 runs stored", async () => {
    const { store, rowsRead, later } = await countingStore(1000, open);
    const { watch, broadcasts } = watchOver(store);

    await watch.poll();
    expect(rowsRead).toEqual([RUN_LIST_LIMIT]);
    expect(broadcasts[0]?.runs).toHaveLength(RUN_LIST_LIMIT);
    expect(broadcasts[0]?.runs[0]?.runId).toBe("run-1000");

    later();
    await watch.poll();
    expect(rowsRead.at(-1)).toBe(0);
    expect(broadcasts).toHaveLength(1);
  });

  it("sends only the run that took a step, and never re-sends what the pages were told", async () => {
    const { store, rowsRead, later } = await countingStore(1000, open);
    const { watch, broadcasts } = watchOver(store);
    await watch.poll();

    later();
    await store.commitStep("run-0007", {
      snapshot: { at: "plan" },
      events: [{ type: "RunStarted", runId: "run-0007", payload: {} }],
    });
    await watch.poll();
    expect(rowsRead.at(-1)).toBe(1);
    expect(broadcasts.at(-1)?.runs.map((run) => run.runId)).toEqual(["run-0007"]);

    // The periodic whole look reads the newest runs again but sends nothing new.
    for (let look = 2; look <= FULL_LOOK_EVERY; look++) await watch.poll();
    expect(Math.max(...rowsRead.slice(1))).toBe(RUN_LIST_LIMIT);
    expect(broadcasts).toHaveLength(2);
  });
});
