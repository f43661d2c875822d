import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { newRun, openStore, storeFileAtSchema, tempDir, tempStore } from "./support/temp-store.js";

const tableNames = (db: Database.Database): string[] =>
  db.prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();

/** A file as stagechart wrote it at schema version 5, before snapshots lived only in `steps`. */
function storeAtVersion5(path: string): void {
  const db = storeFileAtSchema(5, path);
  const insertRun = db.prepare(
    `INSERT INTO runs VALUES (?, 'plan-build', 'suspended', '2030-01-01T00:00:00.000Z',
       '2030-01-01T00:00:05.000Z', 'hash-run', '0.1.0', '{}', NULL, NULL)`,
  );
  const snapshot = db.prepare(
    "INSERT INTO snapshots VALUES (?, ?, ?, '0.0.9', '2030-01-01T00:00:05.000Z')",
  );
  const audit = db.prepare(
    "INSERT INTO audit VALUES (?, ?, '2030-01-01T00:00:01.000Z', 'RunStarted', NULL, NULL, NULL, '{}')",
  );
  const step = db.prepare(
    "INSERT INTO steps (run_id, step, last_seq, at, snapshot) VALUES (?, ?, ?, ?, ?)",
  );
  // Stored before step history existed: its snapshot is only in `snapshots`.
  insertRun.run("old-run");
  audit.run("old-run", 1);
  audit.run("old-run", 2);
  snapshot.run("old-run", '{"value":"plan"}', "hash-old");
  // Stored with history: the latest step's snapshot is the one in `snapshots`.
  insertRun.run("run-2");
  audit.run("run-2", 1);
  step.run("run-2", 1, 1, "2030-01-01T00:00:01.000Z", '{"value":"plan"}');
  step.run("run-2", 2, 1, "2030-01-01T00:00:02.000Z", null);
  step.run("run-2", 3, 1, "2030-01-01T00:00:03.000Z", '{"value":"build"}');
  snapshot.run("run-2", '{"value":"build"}', "hash-2");
  db.close();
}

describe("the compact schema (migration 6)", () => {
  it("keeps each snapshot once, in the step history: no separate snapshots table", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [], snapshot: { value: "plan" } });
    store.commitStep("run-1", { events: [], snapshot: { value: "build" } });
    store.close();
    const db = new Database(path, { readonly: true });
    expect(tableNames(db)).not.toContain("snapshots");
    const stored = db.prepare<[], number>("SELECT COUNT(*) FROM steps WHERE snapshot IS NOT NULL");
    expect(stored.pluck().get()).toBe(2);
    db.close();
    const reopened = openStore(path);
    expect(reopened.getSnapshot("run-1")).toMatchObject({
      ok: true,
      value: { snapshot: { value: "build" }, definitionHash: "hash-1" },
    });
  });

  it("migrates a version-5 file: each run's latest snapshot and its stamp are kept", () => {
    const path = `${tempDir()}/runs.db`;
    storeAtVersion5(path);
    const store = openStore(path);

    expect(store.getSnapshot("old-run")).toEqual({
      ok: true,
      value: {
        snapshot: { value: "plan" },
        definitionHash: "hash-old",
        stagechartVersion: "0.0.9",
        updatedAt: "2030-01-01T00:00:05.000Z",
      },
    });
    expect(store.stepsOf("old-run")).toEqual([
      { step: 1, lastSeq: 2, at: "2030-01-01T00:00:05.000Z" },
    ]);
    expect(store.getSnapshot("run-2")).toEqual({
      ok: true,
      value: {
        snapshot: { value: "build" },
        definitionHash: "hash-2",
        stagechartVersion: "0.0.9",
        updatedAt: "2030-01-01T00:00:03.000Z",
      },
    });
    expect(store.stepsOf("run-2").map(({ step }) => step)).toEqual([1, 2, 3]);
    expect(store.snapshotAtStep("run-2", 2)).toEqual({ value: "plan" });
    store.close();
    const db = new Database(path, { readonly: true });
    expect(tableNames(db)).not.toContain("snapshots");
    db.close();
  });

  it("lays a new file out in 1 KiB pages, so a step rewrites little of what it touches", () => {
    const { path } = tempStore();
    const db = new Database(path, { readonly: true });
    expect(db.pragma("page_size", { simple: true })).toBe(1024);
    db.close();
    expect(SqliteStore.open(path).ok).toBe(true);
  });
});
