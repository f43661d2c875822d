import { statSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { MIGRATIONS, type StepCommit } from "../../src/store/index.js";
import {
  manualClock,
  newRun,
  okValue,
  openStore,
  tempDir,
  tempStore,
} from "./support/temp-store.js";

const PAGE_SIZE = 1024;
const FRAME_HEADER = 24;

/** A step of a model turn: an audit event, a journal entry, a transcript entry, a snapshot. */
const turnStep = (turn: number): StepCommit => ({
  events: [{ type: "ModelTurn", runId: "run-1", payload: { turn } }],
  journal: [{ key: `run-1/plan/1/a1/t${turn}/model`, value: { text: `reply ${turn}` } }],
  transcripts: [
    {
      stageExecutionId: "run-1/plan/1",
      key: `t${String(turn).padStart(4, "0")}`,
      entry: { role: "assistant", text: `reply ${turn}`, calls: [] },
    },
  ],
  snapshot: { value: "plan", turn },
});

const walPages = (path: string): number =>
  (statSync(`${path}-wal`).size - 32) / (PAGE_SIZE + FRAME_HEADER);

describe("a committed step", () => {
  it("writes a page per table and index it adds a row to, and none for the run's row", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    for (let turn = 1; turn <= 3; turn += 1) store.commitStep("run-1", turnStep(turn));

    const before = walPages(path);
    store.commitStep("run-1", turnStep(4));
    // journal, transcripts and steps: each a table page and its key's index page; audit one page,
    // its rows kept in key order (migration 9).
    expect(walPages(path) - before).toBe(7);
  });

  it("moves the run's updatedAt to the time of its last step", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    store.createRun(newRun("run-1"));
    clock.advance(5000);
    store.commitStep("run-1", turnStep(1));

    expect(okValue(store.getRun("run-1")).updatedAt).toBe("2030-01-01T00:00:05.000Z");
    expect(store.listRuns()[0]?.updatedAt).toBe("2030-01-01T00:00:05.000Z");
    clock.advance(1000);
    okValue(store.updateRun("run-1", { status: "done" }));
    expect(okValue(store.getRun("run-1")).updatedAt).toBe("2030-01-01T00:00:06.000Z");
  });
});

/** A file as stagechart wrote it at schema version 8, with a run and two audit events. */
function storeAtVersion8(path: string): void {
  const db = new Database(path);
  db.exec(
    "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL, stagechart_version TEXT NOT NULL)",
  );
  for (const { version, sql } of MIGRATIONS.filter(({ version }) => version <= 8)) {
    db.exec(sql);
    db.prepare("INSERT INTO schema_version VALUES (?, '2030-01-01T00:00:00.000Z', '0.1.0')").run(
      version,
    );
  }
  db.prepare(
    `INSERT INTO runs VALUES ('run-1', 'plan-build', 'suspended', '2030-01-01T00:00:00.000Z',
       '2030-01-01T00:00:05.000Z', 'hash-1', '0.1.0', '{}', NULL, NULL)`,
  ).run();
  const audit = db.prepare(
    "INSERT INTO audit VALUES ('run-1', ?, '2030-01-01T00:00:01.000Z', ?, 'plan', NULL, 1, '{}')",
  );
  audit.run(1, "RunStarted");
  audit.run(2, "StageEntered");
  db.close();
}

describe("migration 9 (the audit log kept in key order)", () => {
  it("keeps a version-8 file's audit log, still append-only", () => {
    const path = `${tempDir()}/runs.db`;
    storeAtVersion8(path);
    const store = openStore(path);

    expect(store.auditOf("run-1").map(({ seq, type }) => [seq, type])).toEqual([
      [1, "RunStarted"],
      [2, "StageEntered"],
    ]);
    store.commitStep("run-1", { events: [{ type: "RunResumed", runId: "run-1", payload: {} }] });
    expect(store.lastSeq("run-1")).toBe(3);
    store.close();
    const db = new Database(path);
    try {
      expect(() => db.prepare("DELETE FROM audit WHERE seq = 1").run()).toThrow(/append-only/);
      expect(() => db.prepare("UPDATE audit SET type = 'x'").run()).toThrow(/append-only/);
      const definition = db
        .prepare<[], string>("SELECT sql FROM sqlite_master WHERE name = 'audit'")
        .pluck()
        .get();
      expect(definition).toMatch(/WITHOUT ROWID/);
    } finally {
      db.close();
    }
  });
});
