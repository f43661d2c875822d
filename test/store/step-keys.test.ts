import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { StepCommit } from "../../src/store/index.js";
import { newRun, openStore, storeFileAtSchema, tempDir, tempStore } from "./support/temp-store.js";

const stepOf = (runId: string, n: number): StepCommit => ({
  events: [{ type: "ModelTurn", runId, payload: { turn: n } }],
  journal: [{ key: `model:${runId}/${runId}/plan/1/${n}`, value: { text: `reply ${n}` } }],
  snapshot: { value: "plan", turn: n },
});

const KEYS = "SELECT r.run_id AS runId, s.step, s.id FROM steps s JOIN runs r USING (run_id)";

describe("a step's key", () => {
  it("is its run's position in the high 32 bits and its number in the low ones", () => {
    const { store, path } = tempStore();
    for (const runId of ["run-a", "run-b"]) store.createRun(newRun(runId));
    store.commitStep("run-b", stepOf("run-b", 1));
    store.commitStep("run-a", stepOf("run-a", 1));
    store.commitStep("run-b", stepOf("run-b", 2));
    store.close();
    const db = new Database(path, { readonly: true });
    const position = db.prepare("SELECT position FROM runs WHERE run_id = ?").pluck();
    const rows = db.prepare<[], { runId: string; step: number; id: number }>(KEYS).all();
    const expected = rows.map(
      ({ runId, step }) => (position.get(runId) as number) * 2 ** 32 + step,
    );
    db.close();
    expect(rows).toHaveLength(3);
    expect(rows.map((row) => row.id)).toEqual(expected);
  });

  it("is the table's only key: the steps have no index of their own", () => {
    const { store, path } = tempStore();
    store.close();
    const db = new Database(path, { readonly: true });
    const indexes = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'steps'")
      .pluck()
      .all();
    db.close();
    expect(indexes).toEqual([]);
  });

  it("refuses a step whose run is not there", () => {
    const { store } = tempStore();
    expect(() => store.commitStep("run-nowhere", { events: [] })).toThrow();
    expect(store.stepsOf("run-nowhere")).toEqual([]);
  });
});

describe("a store made before steps were keyed so (migration 17)", () => {
  /** A store at schema 16 with two runs' steps, interleaved, as an earlier stagechart wrote them. */
  function storeAtSchema16(): string {
    const path = join(tempDir(), "runs.db");
    const db = storeFileAtSchema(16, path);
    const run = db.prepare(
      `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at, definition_hash,
         stagechart_version, options) VALUES (?, 'plan-build', 'done', ?, ?, 'hash-1', '0.1.0', '{}')`,
    );
    run.run("run-y", "2030-01-01T00:00:00.000Z", "2030-01-01T00:00:09.000Z");
    run.run("run-x", "2030-01-01T00:00:01.000Z", "2030-01-01T00:00:09.000Z");
    const step = db.prepare(
      `INSERT INTO steps (run_id, step, last_seq, at, events, journal, snapshot, journal_mark,
         transcript_mark) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0)`,
    );
    const events = (seq: number) =>
      JSON.stringify([{ at: "2030-01-01T00:00:02.000Z", type: `Event${seq}`, payload: { seq } }]);
    for (const [runId, n] of [
      ["run-x", 1],
      ["run-y", 1],
      ["run-x", 2],
      ["run-y", 2],
      ["run-y", 3],
    ] as const)
      step.run(
        runId,
        n,
        n,
        `2030-01-01T00:00:0${n}.000Z`,
        events(n),
        JSON.stringify([[`model:${runId}/${runId}/plan/1/${n}`, { reply: n }]]),
        JSON.stringify({ value: "plan", step: n }),
      );
    db.close();
    return path;
  }

  const allSteps = (path: string) => {
    const db = new Database(path, { readonly: true });
    const rows = db
      .prepare(
        `SELECT run_id, step, last_seq, at, snapshot, journal_mark, transcript_mark,
           definition_hash, stagechart_version, snapshot_base, events, journal, transcripts
         FROM steps ORDER BY run_id, step`,
      )
      .all();
    db.close();
    return rows;
  };

  it("keeps every step's values, each keyed by its run's position, and reads them back", () => {
    const path = storeAtSchema16();
    const before = allSteps(path);
    const store = openStore(path);
    expect(store.stepsOf("run-y").map((step) => step.step)).toEqual([1, 2, 3]);
    expect(store.auditOf("run-x").map((event) => [event.seq, event.type])).toEqual([
      [1, "Event1"],
      [2, "Event2"],
    ]);
    expect(store.snapshotAtStep("run-y", 2)).toEqual({ value: "plan", step: 2 });
    store.close();
    expect(allSteps(path)).toEqual(before);
    const db = new Database(path, { readonly: true });
    const position = db.prepare("SELECT position FROM runs WHERE run_id = ?").pluck();
    for (const { runId, step, id } of db
      .prepare<[], { runId: string; step: number; id: number }>(KEYS)
      .all())
      expect(id).toBe((position.get(runId) as number) * 2 ** 32 + step);
    db.close();
  });

  it("keeps the audit log append-only: the rebuilt table refuses changes and deletes", () => {
    const path = storeAtSchema16();
    openStore(path).close();
    const db = new Database(path);
    try {
      expect(() => db.exec("UPDATE steps SET events = '[]'")).toThrow(/append-only/);
      expect(() => db.exec("DELETE FROM steps")).toThrow(/append-only/);
    } finally {
      db.close();
    }
  });
});
