import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe } from "vitest";
import type { RunStore } from "../../../src/runtime/store-port.js";
import { SqliteStore } from "../../../src/store/sqlite-store.js";
import { tempDir } from "../support/temp-store.js";
import { type EntrySql, okValue, type StoreHarness } from "./harness.js";
import { leasesAndMore } from "./leases-and-more.js";
import { pruneConformance } from "./prune.js";
import { runQueue } from "./queue.js";
import { runsAndSteps } from "./runs-and-steps.js";
import { stepsForksControls } from "./steps-forks-controls.js";

const open: RunStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await Promise.resolve(store.close()).catch(() => {});
});

/** A step's entries in its row (migration 11): damaged past the trigger that guards them. */
const ENTRIES_IN_STEPS: EntrySql = {
  stored: `SELECT journal AS entry FROM steps WHERE journal IS NOT NULL
    UNION ALL SELECT transcripts AS entry FROM steps WHERE transcripts IS NOT NULL`,
  dropJournal: (runId) => [
    "DROP TRIGGER steps_events_no_update",
    `UPDATE steps SET journal = NULL WHERE run_id = '${runId}'`,
  ],
  damageOnly: (journal, transcript) => [
    "DROP TRIGGER steps_events_no_update",
    `UPDATE steps SET journal = json_array(json_array('${journal.key}', json('${journal.value}')))
     WHERE journal IS NOT NULL`,
    `UPDATE steps SET transcripts = json_array(json_set(transcripts -> 0, '$[2]',
       json('${transcript.entry}'))) WHERE transcripts IS NOT NULL`,
  ],
};

/**
 * The store as a caller of the port sees it: every answer awaited, so a throw is a rejection
 * (the SQLite store answers at once, and throws where a networked store rejects).
 */
const awaited = (store: SqliteStore): RunStore =>
  new Proxy(store, {
    get(target, key) {
      const value = Reflect.get(target, key, target);
      return typeof value === "function"
        ? (...args: unknown[]) => (async () => value.apply(target, args))()
        : value;
    },
  });

const sqlite: StoreHarness = {
  async fresh(options) {
    const path = join(tempDir(), "runs.db");
    const opened = (clock = options) => {
      const result = SqliteStore.open(path, clock);
      if (!result.ok) return Promise.resolve(result);
      open.push(result.value);
      return Promise.resolve({ ok: true as const, value: awaited(result.value) });
    };
    return {
      store: okValue(await opened()),
      reopen: opened,
      async sql(text) {
        const db = new Database(path);
        try {
          const statement = db.prepare(text);
          if (statement.reader) return statement.all() as Record<string, unknown>[];
          statement.run();
          return [];
        } finally {
          db.close();
        }
      },
      entries: ENTRIES_IN_STEPS,
    };
  },
};

describe("the SQLite store, as the store port's callers await it", () => {
  runsAndSteps(sqlite);
  leasesAndMore(sqlite);
  runQueue(sqlite);
  stepsForksControls(sqlite);
  pruneConformance(sqlite);
});
