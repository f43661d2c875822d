import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { StagechartError } from "../../src/errors.js";
import { SqliteStore } from "../../src/store/index.js";
import {
  failure,
  fillDisk,
  newRun,
  okValue,
  openStore,
  tempDir,
  tempStore,
} from "./support/temp-store.js";

/** What a store method threw, which must be a StagechartError. */
function thrown(work: () => unknown): StagechartError {
  try {
    work();
  } catch (error) {
    if (error instanceof StagechartError) return error;
    throw new Error(`expected a StagechartError, got ${String(error)}`);
  }
  throw new Error("expected a throw");
}

/** Overwrites the first page of a table's b-tree with garbage, as a failing disk would. */
function garbleTable(path: string, table: string): void {
  const db = new Database(path);
  db.pragma("wal_checkpoint(TRUNCATE)");
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  const root = db
    .prepare<[string], number>("SELECT rootpage FROM sqlite_master WHERE name = ?")
    .pluck()
    .get(table) as number;
  db.close();
  const bytes = readFileSync(path);
  bytes.fill(0xa5, (root - 1) * pageSize, root * pageSize);
  writeFileSync(path, bytes);
}

describe("a store the disk fails under", () => {
  it("names a malformed page Session/StoreCorrupt, with the store's path", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [{ type: "RunStarted", runId: "run-1", payload: {} }] });
    store.close();
    garbleTable(path, "steps");

    const reopened = openStore(path);
    const error = thrown(() => reopened.auditOf("run-1"));
    expect(error.code).toBe("Session/StoreCorrupt");
    expect(error.message).toContain(path);
    expect(error.message).toContain("malformed");
    expect(error.context).toEqual({ path });
  });

  it("names a full disk Session/StoreUnavailable, and works again once there is room", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    const freeSpace = fillDisk(store);
    const big = { type: "RunStarted" as const, runId: "run-1", payload: { big: "x".repeat(1e5) } };

    const error = thrown(() => store.commitStep("run-1", { events: [big] }));
    expect(error.code).toBe("Session/StoreUnavailable");
    expect(error.message).toContain("database or disk is full");
    expect(store.lastSeq("run-1")).toBe(0);

    freeSpace();
    expect(store.commitStep("run-1", { events: [big] }).map((e) => e.seq)).toEqual([1]);
  });

  it("names a full disk while taking a lease Session/StoreUnavailable", () => {
    const { store } = tempStore();
    const runIds = Array.from({ length: 400 }, (_, i) => `run-${i}`);
    for (const runId of runIds) store.createRun(newRun(runId));
    fillDisk(store);
    // Leases fill their pages until one more needs a page the disk does not have.
    const error = thrown(() => {
      for (const runId of runIds) okValue(store.acquireLease(runId, "me", 1000));
    });
    expect(error.code).toBe("Session/StoreUnavailable");
    expect(error.message).toContain("database or disk is full");
  });

  it("leaves misuse alone: a row the schema refuses is still a constraint error", () => {
    const { store } = tempStore();
    const unknownStatus = { ...newRun("run-1"), status: "paused" as never };
    expect(() => store.createRun(unknownStatus)).toThrow(/CHECK constraint/);
  });
});

describe("a store path that cannot be created", () => {
  it("is Session/StoreUnavailable naming the path, and never hangs (a directory under /proc)", () => {
    const path = "/proc/self/nope/runs.db";
    const error = failure(SqliteStore.open(path));
    expect(error.code).toBe("Session/StoreUnavailable");
    expect(error.message).toContain(path);
  });

  it("is Session/StoreUnavailable for a path through a regular file, several levels down", () => {
    const file = join(tempDir(), "a-file");
    writeFileSync(file, "");
    const path = join(file, "x", "y", "runs.db");
    const error = failure(SqliteStore.open(path));
    expect(error.code).toBe("Session/StoreUnavailable");
    expect(error.context).toEqual({ path });
  });

  it.skipIf(process.getuid?.() === 0)(
    "is Session/StoreUnavailable in a directory it may not enter (not as root: root enters any)",
    () => {
      const locked = join(tempDir(), "locked");
      mkdirSync(locked);
      chmodSync(locked, 0o000);
      try {
        expect(failure(SqliteStore.open(join(locked, "sub", "runs.db"))).code).toBe(
          "Session/StoreUnavailable",
        );
      } finally {
        chmodSync(locked, 0o700);
      }
    },
  );
});

describe("a run that ends", () => {
  it("is in the main database file once the store is closed: the WAL can be lost without losing it", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", {
      snapshot: { value: "done" },
      events: [{ type: "RunCompleted", runId: "run-1", payload: {} }],
    });
    okValue(store.updateRun("run-1", { status: "done" }));
    store.close();

    // Only the main file, as if the WAL had been deleted after a kill.
    const copy = join(tempDir(), "runs.db");
    copyFileSync(path, copy);
    const alone = openStore(copy);
    expect(okValue(alone.getRun("run-1")).status).toBe("done");
    expect(alone.auditOf("run-1").map((e) => e.type)).toEqual(["RunCompleted"]);
  });
});
