import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach } from "vitest";
import type { Result, StagechartError } from "../../../src/errors.js";
import type { NewRun } from "../../../src/runtime/run-records.js";
import { MIGRATIONS, SqliteStore, type StoreOptions } from "../../../src/store/index.js";

const dirs: string[] = [];
const stores: SqliteStore[] = [];

afterEach(() => {
  for (const store of stores.splice(0)) store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory, removed after the test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "stagechart-store-"));
  dirs.push(dir);
  return dir;
}

/** Opens a store that must open (the test fails otherwise), closed after the test. */
export function openStore(path: string, options?: StoreOptions): SqliteStore {
  const store = okValue(SqliteStore.open(path, options));
  stores.push(store);
  return store;
}

/** A store on a new file in a temp directory, with its path. */
export function tempStore(options?: StoreOptions): { store: SqliteStore; path: string } {
  const path = join(tempDir(), "runs.db");
  return { store: openStore(path, options), path };
}

export const newRun = (runId: string, overrides: Partial<NewRun> = {}): NewRun => ({
  runId,
  pipelineId: "plan-build",
  definitionHash: "hash-1",
  options: { pipelineFile: "machines/plan-build.yaml", model: "scripted:plan.script.yaml" },
  ...overrides,
});

/** A clock the test moves by hand. */
export function manualClock(start = Date.parse("2030-01-01T00:00:00.000Z")) {
  let time = start;
  return {
    now: () => time,
    advance: (ms: number) => {
      time += ms;
    },
  };
}

/** The error of a result that must have failed. */
export function failure<T>(result: Result<T>): StagechartError {
  if (result.ok) throw new Error(`expected an error, got ${JSON.stringify(result.value)}`);
  return result.error;
}

/** The value of a result that must have succeeded. */
export function okValue<T>(result: Result<T>): T {
  if (!result.ok) throw result.error;
  return result.value;
}

/**
 * Caps the store's file at its current size plus `spare` pages, as a full disk would: SQLite's
 * page limit raises a real SQLITE_FULL. The limit belongs to a connection, so the store's own is
 * reached from behind. Returns what frees the space again.
 */
export function fillDisk(store: SqliteStore, spare = 0): () => void {
  const db = Reflect.get(store, "db") as Database.Database;
  const pages = db.pragma("page_count", { simple: true }) as number;
  db.pragma(`max_page_count = ${pages + spare}`);
  return () => db.pragma("max_page_count = 1073741823");
}

/**
 * A store file at `path` as stagechart wrote it at schema `version`: its migrations up to there
 * applied and recorded, nothing else. Returned open, for the rows of the case; close it after.
 */
export function storeFileAtSchema(version: number, path: string): Database.Database {
  const db = new Database(path);
  db.exec(
    "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL, stagechart_version TEXT NOT NULL)",
  );
  const recordVersion = db.prepare(
    "INSERT INTO schema_version VALUES (?, '2030-01-01T00:00:00.000Z', '0.1.0')",
  );
  for (const { version: each, sql } of MIGRATIONS.filter((m) => m.version <= version)) {
    db.exec(sql);
    recordVersion.run(each);
  }
  return db;
}
