import pg from "pg";
import { describe, expect, it } from "vitest";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import { LIST_RUNS } from "../../../src/store/postgres/queries.js";
import { noPostgres, testPostgres } from "../../support/postgres.js";

const postgres = testPostgres();

/** 1,000 runs created 20 to a millisecond, as a loop creating them makes them. */
const MANY_RUNS = `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at,
    definition_hash, stagechart_version, options)
  SELECT 'run-' || i, 'plan-build', 'running',
    to_char(timestamp '2030-01-01' + (i / 20) * interval '1 millisecond',
      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    '2030-01-01T00:00:00.000Z', 'hash-1', '0.1.0', '{}'
  FROM generate_series(1, 1000) i`;

describe.skipIf(noPostgres)("the PostgreSQL store's runs listing", () => {
  it("reads a page's rows from an index in the listing's order, sorting none (migration 12)", async () => {
    const url = await postgres().createDatabase();
    const opened = await PostgresStore.open(url);
    if (!opened.ok) throw opened.error;
    await opened.value.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(MANY_RUNS);
      await client.query("ANALYZE runs");
      const { rows } = await client.query<{ "QUERY PLAN": string }>(
        `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${LIST_RUNS}`,
        [null, 10, null],
      );
      const plan = rows.map((row) => row["QUERY PLAN"].trim());
      // Newest first, and the later-inserted first within a millisecond: 10 rows read, not the
      // millisecond's 20 sorted.
      expect(plan).toEqual([
        "Limit (actual rows=10 loops=1)",
        "->  Index Scan Backward using runs_by_creation on runs (actual rows=10 loops=1)",
      ]);
    } finally {
      await client.end();
    }
  });
});
