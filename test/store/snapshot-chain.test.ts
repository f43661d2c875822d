import { join } from "node:path";
import { deflateSync } from "node:zlib";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { snapshotAt } from "./support/stage-snapshots.js";
import {
  failure,
  newRun,
  okValue,
  openStore,
  storeFileAtSchema,
  tempDir,
  tempStore,
} from "./support/temp-store.js";

const storedBytes = (path: string): { json: number; stored: number } => {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare<[], { json: number; stored: number }>(
        `SELECT SUM(CASE WHEN snapshot_base IS NULL THEN length(snapshot) ELSE 0 END) AS json,
           SUM(length(CAST(snapshot AS BLOB))) AS stored FROM steps`,
      )
      .get() as { json: number; stored: number };
  } finally {
    db.close();
  }
};

const basesOf = (path: string): (number | null)[] => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare("SELECT snapshot_base FROM steps ORDER BY step").pluck().all() as (
      | number
      | null
    )[];
  } finally {
    db.close();
  }
};

describe("a run's snapshots", () => {
  it("are stored as patches, each against the one before, and read back as committed", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    const committed = Array.from({ length: 20 }, (_, i) => snapshotAt(i + 1));
    for (const snapshot of committed) store.commitStep("run-1", { events: [], snapshot });

    const whole = committed.reduce((sum, each) => sum + JSON.stringify(each).length, 0);
    const { json, stored } = storedBytes(path);
    expect(json).toBe(JSON.stringify(committed[0]).length);
    expect(stored).toBeLessThan(whole / 4);
    expect(basesOf(path)).toEqual([null, ...committed.slice(1).map(() => 1)]);
    expect(okValue(store.getSnapshot("run-1")).snapshot).toEqual(committed.at(-1));
    committed.forEach((snapshot, i) => {
      expect(store.snapshotAtStep("run-1", i + 1)).toEqual(snapshot);
    });
  });

  it("start a new chain once its patches add up to more than 16 KiB (or the keyframe, when larger)", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    for (let turn = 1; turn <= 300; turn++)
      store.commitStep("run-1", { events: [], snapshot: snapshotAt(turn) });

    const bases = basesOf(path);
    const keyframes = bases.flatMap((base, i) => (base === null ? [i + 1] : []));
    expect(keyframes.length).toBeGreaterThan(2);
    const db = new Database(path, { readonly: true });
    const patchBytes = db
      .prepare<[number], number>("SELECT SUM(length(snapshot)) FROM steps WHERE snapshot_base = ?")
      .pluck();
    for (const keyframe of keyframes)
      expect(patchBytes.get(keyframe) ?? 0).toBeLessThanOrEqual(16 * 1024);
    db.close();
    expect(store.snapshotAtStep("run-1", 300)).toEqual(snapshotAt(300));
  });

  it("cost what a step changed: a part of the snapshot shared with the step before is not written again", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    const finished = Object.fromEntries(
      Array.from({ length: 1000 }, (_, i) => [
        `stage-${i}`,
        { verdict: "ok", notes: "x".repeat(50) },
      ]),
    );
    store.commitStep("run-1", { events: [], snapshot: { context: { finished, turn: 0 } } });
    const first = storedBytes(path).stored;
    for (let turn = 1; turn <= 50; turn++)
      store.commitStep("run-1", { events: [], snapshot: { context: { finished, turn } } });

    expect(storedBytes(path).stored - first).toBeLessThan(50 * 40);
    expect(okValue(store.getSnapshot("run-1")).snapshot).toEqual({
      context: { finished, turn: 50 },
    });
  });

  it("take a large snapshot whole about once per 128 of its bytes in steps, so its keyframes cost a step no more as it grows", () => {
    for (const stages of [200, 2000]) {
      const { store, path } = tempStore();
      store.createRun(newRun("run-1"));
      const finished = Object.fromEntries(
        Array.from({ length: stages }, (_, i) => [`stage-${i}`, { verdict: "ok", n: i }]),
      );
      const steps = 1000;
      for (let turn = 1; turn <= steps; turn++)
        store.commitStep("run-1", { events: [], snapshot: { context: { finished, turn } } });
      const size = JSON.stringify({ context: { finished, turn: 1 } }).length;
      const retaken = basesOf(path).filter((base) => base === null).length - 1;
      // Cut every 256 links, the 2,000-stage snapshot (about 80 KB) was stored whole 3 times
      // more: a keyframe a step grew with the stages.
      expect(retaken).toBeLessThanOrEqual((steps * 128) / size + 1);
      expect(store.snapshotAtStep("run-1", steps)).toEqual({ context: { finished, turn: steps } });
    }
  });

  it("take a new keyframe when a step changes more than the chain can carry, and after the store is opened again", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(1, "plan") });
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(1, "large-stage") });
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(2, "large-stage") });
    store.close();
    const reopened = openStore(path);
    reopened.commitStep("run-1", { events: [], snapshot: snapshotAt(3, "large-stage") });

    expect(basesOf(path)).toEqual([null, null, 2, null]);
    expect(reopened.snapshotAtStep("run-1", 3)).toEqual(snapshotAt(2, "large-stage"));
  });

  it("do not go on from a step that was rolled back", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(1, "plan") });
    const db = new Database(path);
    db.exec(`CREATE TRIGGER full_disk BEFORE INSERT ON steps WHEN NEW.step = 2
             BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
    expect(() => store.commitStep("run-1", { events: [], snapshot: snapshotAt(2) })).toThrow();
    db.exec("DROP TRIGGER full_disk");
    db.close();

    const next = snapshotAt(3);
    store.commitStep("run-1", { events: [], snapshot: next });
    expect(okValue(store.getSnapshot("run-1")).snapshot).toEqual(next);
    expect(store.snapshotAtStep("run-1", 1)).toEqual(snapshotAt(1, "plan"));
  });

  it("whose keyframe is damaged read back as Session/SnapshotCorrupt", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(1) });
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(2) });
    const db = new Database(path);
    db.prepare("UPDATE steps SET snapshot = ? WHERE step = 1").run(JSON.stringify(snapshotAt(7)));
    db.close();

    expect(failure(store.getSnapshot("run-1"))).toMatchObject({
      code: "Session/SnapshotCorrupt",
      context: { runId: "run-1" },
    });
  });

  it("whose chain lost a link read back as Session/SnapshotCorrupt", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    for (let turn = 1; turn <= 3; turn++)
      store.commitStep("run-1", { events: [], snapshot: snapshotAt(turn) });
    const db = new Database(path);
    db.prepare("UPDATE steps SET snapshot = NULL WHERE step = 2").run();
    db.close();

    expect(failure(store.getSnapshot("run-1"))).toMatchObject({ code: "Session/SnapshotCorrupt" });
    expect(store.snapshotAtStep("run-1", 1)).toEqual(snapshotAt(1));
  });
});

describe("a store written by a stagechart that stored zlib deltas", () => {
  it("reads a delta against its keyframe, and goes on with patches", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(1) });
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(2) });
    const keyframe = JSON.stringify(snapshotAt(1));
    const delta = deflateSync(JSON.stringify(snapshotAt(2)), { dictionary: Buffer.from(keyframe) });
    const db = new Database(path);
    db.prepare("UPDATE steps SET snapshot = ?, snapshot_base = 1 WHERE step = 2").run(delta);
    db.close();
    store.close();

    const reopened = openStore(path);
    expect(okValue(reopened.getSnapshot("run-1")).snapshot).toEqual(snapshotAt(2));
    reopened.commitStep("run-1", { events: [], snapshot: snapshotAt(3) });
    reopened.commitStep("run-1", { events: [], snapshot: snapshotAt(4) });
    expect([1, 2, 3, 4].map((n) => reopened.snapshotAtStep("run-1", n))).toEqual(
      [1, 2, 3, 4].map((n) => snapshotAt(n)),
    );
  });
});

describe("a store from before snapshot deltas (schema 8)", () => {
  it("keeps its snapshots as they were and stores the next ones as patches", () => {
    const path = join(tempDir(), "runs.db");
    const db = storeFileAtSchema(8, path);
    db.exec(`INSERT INTO runs VALUES ('run-1', 'plan-build', 'running', 'then', 'then', 'hash-1',
      '0.1.0', '{}', NULL, NULL)`);
    const step = db.prepare(`INSERT INTO steps (run_id, step, last_seq, at, snapshot,
      definition_hash, stagechart_version) VALUES ('run-1', ?, 0, 'then', ?, 'hash-1', '0.1.0')`);
    step.run(1, JSON.stringify(snapshotAt(1)));
    step.run(2, JSON.stringify(snapshotAt(2)));
    db.close();

    const store = openStore(path);
    expect(okValue(store.getSnapshot("run-1")).snapshot).toEqual(snapshotAt(2));
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(3) });
    store.commitStep("run-1", { events: [], snapshot: snapshotAt(4) });

    expect([1, 2, 3, 4].map((n) => store.snapshotAtStep("run-1", n))).toEqual(
      [1, 2, 3, 4].map((n) => snapshotAt(n)),
    );
    const reread = new Database(path, { readonly: true });
    const bases = reread.prepare("SELECT snapshot_base FROM steps ORDER BY step").pluck().all();
    reread.close();
    expect(bases).toEqual([null, null, null, 3]);
  });
});
