import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe } from "vitest";
import { AsyncSqliteStore } from "../../../src/store/async-sqlite-store.js";
import type { AsyncRunStore } from "../../../src/store/postgres/async-run-store.js";
import { tempDir } from "../support/temp-store.js";
import { okValue, type StoreHarness } from "./harness.js";
import { leasesAndMore } from "./leases-and-more.js";
import { runQueue } from "./queue.js";
import { runsAndSteps } from "./runs-and-steps.js";
import { stepsForksControls } from "./steps-forks-controls.js";

const open: AsyncRunStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await store.close().catch(() => {});
});

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
    };
  },
};

describe("the SQLite store, through its asynchronous adapter", () => {
  runsAndSteps(sqlite);
  leasesAndMore(sqlite);
  runQueue(sqlite);
  stepsForksControls(sqlite);
});
