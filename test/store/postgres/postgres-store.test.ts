import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { StagechartError } from "../../../src/errors.js";
import { MIGRATIONS, SqliteStore } from "../../../src/store/index.js";
import { POSTGRES_MIGRATIONS } from "../../../src/store/postgres/migrations.js";
import { PostgresStore } from "../../../src/store/postgres/postgres-store.js";
import * as z from "../../../src/zod.js";
import { noPostgres, testPostgres } from "../../support/postgres.js";
import { AUDIT_ROWS_AT_SCHEMA_8, expectMigratedAudit } from "../support/audit-rows.js";

const skip = noPostgres;
const postgres = testPostgres();

const newRun = (runId: string) => ({
  runId,
  pipelineId: "plan-build",
  definitionHash: "hash-1",
  options: {},
});

/** A new database as stagechart left it at schema `version`, holding the rows `seed` inserts. */
async function databaseAtVersion(version: number, seed: string[]): Promise<string> {
  const url = await postgres().createDatabase();
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
  return url;
}

/** The error a failed open gave, checked to name the store and never carry the password. */
async function openFailure(url: string, password: string): Promise<StagechartError> {
  const opened = await PostgresStore.open(url);
  if (opened.ok) {
    await opened.value.close();
    throw new Error("expected the store not to open");
  }
  const shown = [opened.error.message, JSON.stringify(opened.error), String(opened.error.stack)];
  for (const text of shown) expect(text).not.toContain(password);
  return opened.error;
}

describe("the PostgreSQL schema", () => {
  it("has a migration for every migration of the SQLite store, with the same numbers", () => {
    expect(POSTGRES_MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((m) => m.version));
  });
});

describe.skipIf(skip)("the PostgreSQL store", () => {
  it("has the SQLite store's tables and columns (and a position column where SQLite has only a rowid), its entries in tables of their own and no step key", async () => {
    const url = await postgres().createDatabase();
    const opened = await PostgresStore.open(url);
    if (!opened.ok) throw opened.error;
    await opened.value.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query(
      `SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns
       WHERE table_schema = 'public' AND (column_name <> 'position' OR table_name = 'runs')`,
    );
    await client.end();
    // SQLite keeps a step's journal and transcript entries in its row (migration 11), and keys
    // the row by its rowid named (`id`, migration 17).
    const { journal, transcripts, ...tables } = columnsByTable(rows);
    expect(journal).toEqual(["key", "recorded_at", "run_id", "value"]);
    expect(transcripts).toEqual(["entry", "key", "result_of", "run_id", "stage_execution_id"]);
    const { steps, ...sqliteTables } = sqliteColumns();
    const entryColumns = new Set(["journal", "transcripts", "id"]);
    expect(tables).toEqual({
      ...sqliteTables,
      steps: steps?.filter((column) => !entryColumns.has(column)),
    });
  });

  it("upgrades a version-3 database: rows already there get positions, old steps no fork marks", async () => {
    const url = await databaseAtVersion(3, [
      `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at,
        definition_hash, stagechart_version, options) VALUES
        ('run-1', 'plan-build', 'running', 'then', 'then', 'hash-1', 'old', '{}')`,
      `INSERT INTO journal VALUES
        ('model:run-1/run-1/plan/1/0', 'run-1', '{"reply":"old"}', 'then')`,
      `INSERT INTO transcripts VALUES
        ('run-1/plan/1', 'k0', 'run-1', '{"role":"user","text":"old"}')`,
      `INSERT INTO steps VALUES ('run-1', 1, 0, 'then', '{"value":"plan"}')`,
    ]);

    const opened = await PostgresStore.open(url);
    if (!opened.ok) throw opened.error;
    const store = opened.value;
    try {
      const first = { events: [] };
      const old = await store.forkRun("run-1", 1, newRun("run-2"), first);
      expect(old.ok ? undefined : old.error.code).toBe("Session/ForkUnavailable");
      await store.commitStep("run-1", { events: [], snapshot: { value: "build" } });
      const forked = await store.forkRun("run-1", 2, newRun("run-3"), first);
      expect(forked.ok).toBe(true);
      expect(await store.read("run-3/plan/1")).toEqual([{ role: "user", text: "old" }]);
      expect(await store.get("model:run-3/run-3/plan/1/0", z.unknown())).toEqual({ reply: "old" });
    } finally {
      await store.close();
    }
  });

  it("upgrades a version-8 database: every audit event moves into its step's row", async () => {
    const url = await databaseAtVersion(8, AUDIT_ROWS_AT_SCHEMA_8);
    const opened = await PostgresStore.open(url);
    if (!opened.ok) throw opened.error;
    const store = opened.value;
    try {
      const [run1, run2] = [await store.auditOf("run-1"), await store.auditOf("run-2")];
      expectMigratedAudit(run1, run2, await store.stepsOf("run-1"));
      expect((await store.auditOf("run-1", 2)).map((event) => event.seq)).toEqual([3, 4]);
      const [next] = await store.commitStep("run-1", {
        events: [{ type: "RunResumed", runId: "run-1", payload: {} }],
      });
      expect(next?.seq).toBe(5);
    } finally {
      await store.close();
    }
  });

  it("upgrades a version-6 database: its runs stay, and runs can now be queued", async () => {
    const url = await databaseAtVersion(6, [
      `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at,
        definition_hash, stagechart_version, options) VALUES
        ('run-1', 'plan-build', 'done', 'then', 'then', 'hash-1', 'old', '{}')`,
    ]);
    const opened = await PostgresStore.open(url);
    if (!opened.ok) throw opened.error;
    const store = opened.value;
    try {
      expect((await store.listRuns()).map((run) => run.status)).toEqual(["done"]);
      const queued = await store.enqueueRun(newRun("run-2"));
      expect(queued.ok && queued.value.status).toBe("queued");
    } finally {
      await store.close();
    }
  });

  it("upgrades a version-5 database: each run's latest snapshot and its stamp move into steps", async () => {
    const run = (runId: string) => `INSERT INTO runs VALUES ('${runId}', 'plan-build',
      'suspended', 'then', '2030-01-01T00:00:05.000Z', 'hash-run', '0.1.0', '{}', NULL, NULL)`;
    const audit = (runId: string, seq: number) => `INSERT INTO audit VALUES ('${runId}', ${seq},
      '2030-01-01T00:00:01.000Z', 'RunStarted', NULL, NULL, NULL, '{}')`;
    const snapshot = (runId: string, json: string, hash: string) => `INSERT INTO snapshots
      VALUES ('${runId}', '${json}', '${hash}', '0.0.9', '2030-01-01T00:00:05.000Z')`;
    const step = (runId: string, n: number, json: string | null) => `INSERT INTO steps
      (run_id, step, last_seq, at, snapshot) VALUES ('${runId}', ${n}, 1,
      '2030-01-01T00:00:0${n}.000Z', ${json === null ? "NULL" : `'${json}'`})`;
    const url = await databaseAtVersion(5, [
      // Stored before step history existed: its snapshot is only in `snapshots`.
      run("old-run"),
      audit("old-run", 1),
      audit("old-run", 2),
      snapshot("old-run", '{"value":"plan"}', "hash-old"),
      // Stored with history: the latest step's snapshot is the one in `snapshots`.
      run("run-2"),
      audit("run-2", 1),
      step("run-2", 1, '{"value":"plan"}'),
      step("run-2", 2, null),
      step("run-2", 3, '{"value":"build"}'),
      snapshot("run-2", '{"value":"build"}', "hash-2"),
    ]);

    const opened = await PostgresStore.open(url);
    if (!opened.ok) throw opened.error;
    const store = opened.value;
    try {
      expect(await store.getSnapshot("old-run")).toEqual({
        ok: true,
        value: {
          snapshot: { value: "plan" },
          definitionHash: "hash-old",
          stagechartVersion: "0.0.9",
          updatedAt: "2030-01-01T00:00:05.000Z",
        },
      });
      expect(await store.stepsOf("old-run")).toEqual([
        { step: 1, lastSeq: 2, at: "2030-01-01T00:00:05.000Z" },
      ]);
      expect(await store.getSnapshot("run-2")).toEqual({
        ok: true,
        value: {
          snapshot: { value: "build" },
          definitionHash: "hash-2",
          stagechartVersion: "0.0.9",
          updatedAt: "2030-01-01T00:00:03.000Z",
        },
      });
      expect((await store.stepsOf("run-2")).map(({ step }) => step)).toEqual([1, 2, 3]);
      expect(await store.snapshotAtStep("run-2", 2)).toEqual({ value: "plan" });
    } finally {
      await store.close();
    }
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query("SELECT to_regclass('snapshots') AS snapshots");
    await client.end();
    expect(rows[0].snapshots).toBeNull();
  });

  it("opened by several workers at once on a new database, applies each migration once", async () => {
    const url = await postgres().createDatabase();
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresStore.open(url)));
    for (const opened of stores) if (opened.ok) await opened.value.close();
    expect(stores.every((opened) => opened.ok)).toBe(true);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query("SELECT version FROM schema_version ORDER BY version");
    await client.end();
    expect(rows.map((row) => row.version)).toEqual(MIGRATIONS.map((m) => m.version));
  });

  it("refuses a wrong password: Session/StoreUnavailable naming the host and database only", async () => {
    const url = await postgres().createDatabase();
    const wrong = url.replace(postgres().password, "not-the-password-42");
    const error = await openFailure(wrong, "not-the-password-42");
    expect(error.code).toBe("Session/StoreUnavailable");
    const shown = `postgres://stagechart@${postgres().host}:${postgres().port}/${new URL(url).pathname.slice(1)}`;
    expect(error.message).toContain(`cannot use the store at ${shown}:`);
    expect(error.message).toContain("password authentication failed");
    expect(error.context).toEqual({ store: shown, code: "28P01" });
  });

  it("names a server nobody answers at, and a database that does not exist, the same way", async () => {
    const url = new URL(await postgres().createDatabase());
    url.pathname = "/no_such_database";
    const missing = await openFailure(url.href, postgres().password);
    expect(missing).toMatchObject({ code: "Session/StoreUnavailable", context: { code: "3D000" } });

    url.port = "1";
    const unreachable = await openFailure(url.href, postgres().password);
    expect(unreachable).toMatchObject({
      code: "Session/StoreUnavailable",
      context: {
        store: `postgres://stagechart@${postgres().host}:1/no_such_database`,
        code: "ECONNREFUSED",
      },
    });
  });

  it("tells a connection dropped under a call as Session/StoreUnavailable; the next call works", async () => {
    const url = await postgres().createDatabase();
    const opened = await PostgresStore.open(url, { poolSize: 1 });
    if (!opened.ok) throw opened.error;
    const store = opened.value;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await store.createRun(newRun("run-1"));
      // The store's read waits on a lock held here; its connection is then cut under it.
      await admin.query("BEGIN; LOCK TABLE runs IN ACCESS EXCLUSIVE MODE");
      const reading = store.getRun("run-1").then(
        () => undefined,
        (error: unknown) => error,
      );
      await until(async () => (await waitingBackends(admin)).length > 0);
      await admin.query("SELECT pg_terminate_backend($1)", [(await waitingBackends(admin))[0]]);
      await admin.query("COMMIT");

      const lost = await reading;
      expect(lost).toBeInstanceOf(StagechartError);
      expect(lost).toMatchObject({ code: "Session/StoreUnavailable", context: { code: "57P01" } });
      expect(JSON.stringify(lost) + String((lost as Error).message)).not.toContain(
        postgres().password,
      );
      expect((await store.getRun("run-1")).ok).toBe(true);
    } finally {
      await admin.end();
      await store.close();
    }
  });

  it("tells a connection dropped under a step's transaction as Session/StoreUnavailable, stores none of it, and the process goes on", async () => {
    const url = await postgres().createDatabase();
    const opened = await PostgresStore.open(url, { poolSize: 1 });
    if (!opened.ok) throw opened.error;
    const store = opened.value;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const step = (n: number) => ({
      events: [{ type: "StageInit" as const, runId: "run-1", payload: { n } }],
      snapshot: { n },
    });
    try {
      await store.createRun(newRun("run-1"));
      await store.commitStep("run-1", step(1));
      // The step's transaction waits on the run's row, locked here; its connection is cut under it.
      await admin.query("BEGIN; SELECT 1 FROM runs WHERE run_id = 'run-1' FOR UPDATE");
      const committing = store.commitStep("run-1", step(2)).then(
        () => undefined,
        (error: unknown) => error,
      );
      await until(async () => (await waitingBackends(admin)).length > 0);
      await admin.query("SELECT pg_terminate_backend($1)", [(await waitingBackends(admin))[0]]);
      await admin.query("COMMIT");

      // An 'error' event nobody listened for would have ended this process (and the test) here.
      expect(await committing).toMatchObject({ code: "Session/StoreUnavailable" });
      expect((await store.auditOf("run-1")).map((event) => event.seq)).toEqual([1]);
      expect(await store.snapshotAtStep("run-1", 2)).toEqual({ n: 1 });
      const next = await store.commitStep("run-1", step(3));
      expect(next.map((event) => event.seq)).toEqual([2]);
      expect(await store.snapshotAtStep("run-1", 2)).toEqual({ n: 3 });
    } finally {
      await admin.end();
      await store.close();
    }
  });
});

type TableColumns = Record<string, string[]>;

function columnsByTable(rows: { table: string; column: string }[]): TableColumns {
  const tables: TableColumns = {};
  for (const { table, column } of rows) tables[table] = [...(tables[table] ?? []), column].sort();
  return tables;
}

/** The tables and columns of a new SQLite store. */
function sqliteColumns(): TableColumns {
  const dir = mkdtempSync(join(tmpdir(), "stagechart-schema-"));
  try {
    const store = SqliteStore.open(join(dir, "runs.db"));
    if (!store.ok) throw store.error;
    store.value.close();
    const db = new Database(join(dir, "runs.db"));
    const rows = db
      .prepare<[], { table: string; column: string }>(
        `SELECT m.name AS "table", c.name AS "column"
         FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table'`,
      )
      .all();
    db.close();
    return columnsByTable(rows);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The backends of this database waiting on a lock. */
async function waitingBackends(admin: pg.Client): Promise<number[]> {
  const { rows } = await admin.query(
    `SELECT pid FROM pg_stat_activity
     WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return rows.map((row) => row.pid);
}

/** Asks again until `condition` holds (the test's own timeout bounds it). */
async function until(condition: () => Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe.skipIf(skip)("the PostgreSQL store between owners", () => {
  async function fresh(): Promise<{ store: PostgresStore; url: string }> {
    const url = await postgres().createDatabase();
    const opened = await PostgresStore.open(url, { poolSize: 2 });
    if (!opened.ok) throw opened.error;
    return { store: opened.value, url };
  }

  it("refuses a step written under a lease another owner has taken over, storing none of it", async () => {
    const { store } = await fresh();
    try {
      await store.createRun(newRun("run-1"));
      expect((await store.acquireLease("run-1", "worker-a", 60_000)).ok).toBe(true);
      const started = { type: "RunStarted" as const, runId: "run-1", payload: {} };
      await store.commitStep("run-1", { events: [started], owner: "worker-a" });
      await store.releaseLease("run-1", "worker-a");
      expect((await store.acquireLease("run-1", "worker-b", 60_000)).ok).toBe(true);

      await expect(
        store.commitStep("run-1", {
          events: [started],
          snapshot: { value: "x" },
          owner: "worker-a",
        }),
      ).rejects.toMatchObject({ code: "Session/LeaseLost" });
      expect(await store.auditOf("run-1")).toHaveLength(1);
      expect(await store.stepsOf("run-1")).toHaveLength(1);
      await store.commitStep("run-1", { events: [started], owner: "worker-b" });
      expect(await store.lastSeq("run-1")).toBe(2);
    } finally {
      await store.close();
    }
  });

  it("lets a worker claim a running run left without a lease once it is untouched for a lease's time", async () => {
    const { store, url } = await fresh();
    try {
      await store.saveDefinition("hash-1", { entry: "p.yaml", files: { "p.yaml": "id: p" } });
      await store.createRun(newRun("left"));
      await store.createRun(newRun("starting"));
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(
        "UPDATE runs SET updated_at = '2020-01-01T00:00:00.000Z' WHERE run_id = 'left'",
      );
      await client.end();

      expect((await store.claimRun("worker-a", 15_000))?.runId).toBe("left");
      expect(await store.claimRun("worker-b", 15_000)).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
