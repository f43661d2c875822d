import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { pruneRuns } from "../../../src/runtime/prune.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { noPostgres, testPostgres } from "../../support/postgres.js";
import { okValue } from "../conformance/harness.js";
import { storeEndedRuns } from "../support/prunable-runs.js";

const skip = noPostgres;
const postgres = testPostgres();
const open: PostgresStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
});

const RUN_TABLES = ["runs", "steps", "journal", "transcripts", "control_requests", "leases"];

/** The run tables' bytes on disk, indexes and TOAST included, once VACUUM FULL has compacted them. */
async function compactedBytes(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`VACUUM FULL ${RUN_TABLES.join(", ")}`);
    const sizes = RUN_TABLES.map((table) => `pg_total_relation_size('${table}')`).join(" + ");
    return Number((await client.query(`SELECT (${sizes})::bigint AS bytes`)).rows[0].bytes);
  } finally {
    await client.end();
  }
}

describe.skipIf(skip)(
  `pruning the PostgreSQL store${skip ? " (skipped: no PostgreSQL server installed)" : ""}`,
  () => {
    it("frees the bytes it reports: the deleted rows' sizes, which VACUUM FULL gives back", async () => {
      const url = await postgres().createDatabase();
      const store = okValue(await PostgresStore.open(url, { poolSize: 4 }));
      open.push(store);
      await storeEndedRuns(store, 30);
      const before = await compactedBytes(url);
      const dry = okValue(await pruneRuns(store, { keep: 10, dryRun: true }));
      const report = okValue(await pruneRuns(store, { keep: 10, vacuum: true }));
      expect(report.runs).toHaveLength(20);
      expect(dry.bytesFreed).toBe(report.bytesFreed);
      expect(report.bytesFreed).toBeGreaterThan(20 * 5 * 1000);
      const after = await compactedBytes(url);
      // Rows are stored in 8 KiB pages with their headers and index entries: the tables shrink
      // by at least the rows' bytes, and not by more than twice them.
      expect(before - after).toBeGreaterThanOrEqual(report.bytesFreed);
      expect(before - after).toBeLessThan(2 * report.bytesFreed);
      expect(await store.listRuns()).toHaveLength(10);
    });
  },
);
