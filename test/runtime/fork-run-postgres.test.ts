import pg from "pg";
import { describe } from "vitest";
import { resumeRun, startRun } from "../../src/runtime/run.js";
import { noPostgres, sharedStores } from "../store/postgres/support/shared-store.js";
import { forkingSpec } from "./support/forking.js";

const stores = sharedStores();

/** Runs one statement on the database at `url`, behind the store's back. */
async function rawSql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

describe.skipIf(noPostgres)("forking a run at a step, on the PostgreSQL store", () => {
  forkingSpec(async () => {
    const { url, store } = await stores.fresh();
    return {
      store,
      start: (pipeline, options) => startRun(pipeline, { ...options, store }),
      resume: (pipeline, runId, options) => resumeRun(pipeline, runId, { ...options, store }),
      sql: (text) => rawSql(url, text),
    };
  });
});
