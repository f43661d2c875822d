import pg from "pg";
import { afterAll, afterEach, beforeAll, describe } from "vitest";
import type { AsyncRunStore } from "../../../src/store/postgres/async-run-store.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { postgresBinaries, startPostgres, type TestPostgres } from "../../support/postgres.js";
import { okValue, type StoreHarness } from "./harness.js";
import { leasesAndMore } from "./leases-and-more.js";
import { runQueue } from "./queue.js";
import { runsAndSteps } from "./runs-and-steps.js";
import { stepsForksControls } from "./steps-forks-controls.js";

const binaries = postgresBinaries();
// Skipped only on a machine without PostgreSQL; CI installs it (.ci/run), where this fails instead.
const skip = "missing" in binaries && process.env.CI !== "true";

let server: TestPostgres;
beforeAll(async () => {
  if (skip) return;
  if ("missing" in binaries) throw new Error(binaries.missing);
  server = await startPostgres(binaries.bin);
});
afterAll(async () => {
  await server?.stop();
});

const open: AsyncRunStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await store.close().catch(() => {});
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
    const url = await server.createDatabase();
    const opened = async (clock = options) => {
      const result = await PostgresStore.open(url, { ...clock, poolSize: 4 });
      if (result.ok) open.push(result.value);
      return result;
    };
    return { store: okValue(await opened()), reopen: opened, sql: (text) => rawSql(url, text) };
  },
};

describe.skipIf(skip)(
  `the PostgreSQL store${"missing" in binaries ? ` (skipped: ${binaries.missing})` : ""}`,
  () => {
    runsAndSteps(postgres);
    leasesAndMore(postgres);
    runQueue(postgres);
    stepsForksControls(postgres);
  },
);
