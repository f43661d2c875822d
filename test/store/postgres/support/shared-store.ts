import { readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach } from "vitest";
import { loadPipelineFile } from "../../../../src/definitions/index.js";
import type { PipelineDefinition } from "../../../../src/definitions/pipeline-types.js";
import { POSTGRES_MIGRATIONS } from "../../../../src/store/postgres/migrations.js";
import { PostgresStore } from "../../../../src/store/postgres/postgres-store.js";
import { MACHINES_DIR } from "../../../support/pipeline-files.js";
import { noPostgres, testPostgres } from "../../../support/postgres.js";

export { noPostgres };

/** A PostgreSQL server for the file's tests, and its stores, each closed after its test. */
export function sharedStores() {
  const server = testPostgres();
  const open: PostgresStore[] = [];
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close().catch(() => {});
  });
  const openStore = async (url: string) => {
    const opened = await PostgresStore.open(url, { poolSize: 4 });
    if (!opened.ok) throw opened.error;
    open.push(opened.value);
    return opened.value;
  };
  return {
    /** A store on a new, empty database, and that database's URL. */
    async fresh() {
      const url = await server().createDatabase();
      return { url, store: await openStore(url) };
    },
    /** Another store on the database at `url`, as another process would open. */
    reopen: openStore,
    /** The server itself (to restart it under the stores). */
    server,
  };
}

/** The bundled code-review pipeline, loaded from the repository's files (read only). */
export async function bundledCodeReview(): Promise<PipelineDefinition> {
  const loaded = await loadPipelineFile(join(MACHINES_DIR, "code-review.yaml"));
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
  return loaded.value;
}

/** Its scripted model's script. */
export const codeReviewScript = () =>
  readFileSync(join(MACHINES_DIR, "code-review.script.yaml"), "utf8");

/** Brings the empty database at `url` to schema `version` as stagechart left it, then runs `seed`. */
export async function databaseAtSchema(url: string, version: number, seed: string[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE TABLE schema_version (version INTEGER PRIMARY KEY,
      applied_at TEXT NOT NULL, stagechart_version TEXT NOT NULL)`);
    for (const migration of POSTGRES_MIGRATIONS.filter((m) => m.version <= version)) {
      await client.query(migration.sql);
      await client.query("INSERT INTO schema_version VALUES ($1, 'then', 'old')", [
        migration.version,
      ]);
    }
    for (const statement of seed) await client.query(statement);
  } finally {
    await client.end();
  }
}

/** Runs one statement on the database at `url`, behind the stores' backs; its rows. */
export async function rowsOf(url: string, text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}
