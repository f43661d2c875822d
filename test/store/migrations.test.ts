import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_STORE_PATH,
  MIGRATIONS,
  SCHEMA_VERSION,
  SqliteStore,
} from "../../src/store/index.js";
import { failure, newRun, openStore, tempDir, tempStore } from "./support/temp-store.js";

/** Reads the file behind a store's back, as another program would. */
function inspect<T>(path: string, read: (db: Database.Database) => T): T {
  const db = new Database(path, { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const tables = (path: string): string[] =>
  inspect(path, (db) =>
    db
      .prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all(),
  );

const versions = (path: string): number[] =>
  inspect(path, (db) =>
    db.prepare<[], number>("SELECT version FROM schema_version ORDER BY version").pluck().all(),
  );

describe("opening a store", () => {
  it("lives in .stagechart/runs.db by default", () => {
    expect(DEFAULT_STORE_PATH).toBe(".stagechart/runs.db");
  });

  it("creates every table on a new file and records each migration's version", () => {
    const { path } = tempStore();
    expect(tables(path)).toEqual([
      "control_requests",
      "definitions",
      "leases",
      "memory",
      "pruned_runs",
      "prunes",
      "runs",
      "schema_version",
      "steps",
    ]);
    expect(versions(path)).toEqual(MIGRATIONS.map(({ version }) => version));
    expect(versions(path).at(-1)).toBe(SCHEMA_VERSION);
  });

  it("creates the missing parent directories", () => {
    const path = join(tempDir(), "project", ".stagechart", "runs.db");
    openStore(path).close();
    expect(tables(path)).toContain("runs");
  });

  it("reopens an existing file without migrating again or losing data", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.close();

    const reopened = openStore(path);
    expect(versions(path)).toEqual(MIGRATIONS.map(({ version }) => version));
    expect(reopened.listRuns().map((run) => run.runId)).toEqual(["run-1"]);
  });

  it("refuses a file written by a newer schema, and leaves it as it was", () => {
    const { store, path } = tempStore();
    store.close();
    const db = new Database(path);
    db.prepare("INSERT INTO schema_version VALUES (?, ?, ?)").run(
      SCHEMA_VERSION + 1,
      "2031-01-01T00:00:00.000Z",
      "9.0.0",
    );
    db.close();

    const error = failure(SqliteStore.open(path));
    expect(error.code).toBe("Session/StoreTooNew");
    expect(error.context).toEqual({
      found: SCHEMA_VERSION + 1,
      supported: SCHEMA_VERSION,
      writtenBy: "9.0.0",
    });
    expect(versions(path)).toEqual([
      ...MIGRATIONS.map(({ version }) => version),
      SCHEMA_VERSION + 1,
    ]);
  });

  it("puts the file in WAL mode", () => {
    const { path } = tempStore();
    expect(inspect(path, (db) => db.pragma("journal_mode", { simple: true }))).toBe("wal");
  });

  it("reports a directory as the path as StoreUnavailable", () => {
    const path = join(tempDir(), "runs.db");
    mkdirSync(path);
    const error = failure(SqliteStore.open(path));
    expect(error.code).toBe("Session/StoreUnavailable");
    expect(error.context).toEqual({ path });
  });

  it("reports a file that is not a database as StoreUnavailable", () => {
    const path = join(tempDir(), "runs.db");
    writeFileSync(path, "this is not a database, only some text long enough to have a header\n");
    const error = failure(SqliteStore.open(path));
    expect(error.code).toBe("Session/StoreUnavailable");
    expect(error.message).toMatch(/not a database/);
  });

  it("reports a parent that is a file as StoreUnavailable", () => {
    const parent = join(tempDir(), "not-a-dir");
    writeFileSync(parent, "");
    expect(failure(SqliteStore.open(join(parent, "runs.db"))).code).toBe(
      "Session/StoreUnavailable",
    );
  });
});
