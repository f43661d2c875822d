import pg from "pg";
import { afterEach, describe } from "vitest";
import type { RunStore } from "../../../src/runtime/store-port.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { noPostgres, testPostgres } from "../../support/postgres.js";
import { ENTRY_TABLES, okValue, type StoreHarness } from "./harness.js";
import { leasesAndMore } from "./leases-and-more.js";
import { pruneConformance } from "./prune.js";
import { runQueue } from "./queue.js";
import { runsAndSteps } from "./runs-and-steps.js";
import { stepsForksControls } from "./steps-forks-controls.js";

const skip = noPostgres;
const server = testPostgres();

const open: RunStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await Promise.resolve(store.close()).catch(() => {});
});

/** Runs one statement on the database behind the store's back. */
async function rawSql(url: string, text: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

const postgres: StoreHarness = {
  async fresh(options) {
    const url = await server().createDatabase();
    const opened = async (clock = options) => {
      const result = await PostgresStore.open(url, { ...clock, poolSize: 4 });
      if (result.ok) open.push(result.value);
      return result;
    };
    const sql = (text: string) => rawSql(url, text);
    return { store: okValue(await opened()), reopen: opened, sql, entries: ENTRY_TABLES };
  },
};

describe.skipIf(skip)(
  `the PostgreSQL store${skip ? " (skipped: no PostgreSQL server installed)" : ""}`,
  () => {
    runsAndSteps(postgres);
    leasesAndMore(postgres);
    runQueue(postgres);
    stepsForksControls(postgres);
    pruneConformance(postgres);
    pruneConformance(postgres);
  },
);
