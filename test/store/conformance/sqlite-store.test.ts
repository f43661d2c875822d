import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe } from "vitest";
import { AsyncSqliteStore } from "../../../src/store/async-sqlite-store.js";
import type { AsyncRunStore } from "../../../src/store/postgres/async-run-store.js";
import { tempDir } from "../support/temp-store.js";
import { type EntrySql, okValue, type StoreHarness } from "./harness.js";
import { leasesAndMore } from "./leases-and-more.js";
import { runQueue } from "./queue.js";
import { runsAndSteps } from "./runs-and-steps.js";
import { stepsForksControls } from "./steps-forks-controls.js";

const open: AsyncRunStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await store.close().catch(() => {});
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

const sqlite: StoreHarness = {
  async fresh(options) {
    const path = join(tempDir(), "runs.db");
    const opened = (clock = options) => {
      const result = AsyncSqliteStore.open(path, clock);
      if (result.ok) open.push(result.value);
      return Promise.resolve(result);
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

describe("the SQLite store, through its asynchronous adapter", () => {
  runsAndSteps(sqlite);
  leasesAndMore(sqlite);
  runQueue(sqlite);
  stepsForksControls(sqlite);
});
