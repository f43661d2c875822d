import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { AuditEventInput } from "../../src/events/audit.js";
import { VERSION } from "../../src/version.js";
import * as z from "../../src/zod.js";
import { AUDIT_ROWS_AT_SCHEMA_8, expectMigratedAudit } from "./support/audit-rows.js";
import {
  failure,
  manualClock,
  newRun,
  okValue,
  openStore,
  storeFileAtSchema,
  tempDir,
  tempStore,
} from "./support/temp-store.js";

/** Replaces a run's latest snapshot (its last step with one, migration 6) by this JSON text. */
const LATEST_SNAPSHOT_UPDATE = `UPDATE steps SET snapshot = ?, snapshot_base = NULL WHERE rowid =
  (SELECT rowid FROM steps WHERE run_id = ? AND snapshot IS NOT NULL ORDER BY step DESC LIMIT 1)`;

const turn = (runId: string, turn: number): AuditEventInput => ({
  type: "ModelTurn",
  runId,
  stageId: "plan",
  stageExecutionId: `${runId}/plan/1`,
  attempt: 1,
  payload: { turn },
});

const started = (runId: string): AuditEventInput => ({
  type: "RunStarted",
  runId,
  payload: { pipelineId: "plan-build" },
});

describe("commitStep", () => {
  it("stores the step's journal and transcript entries with its events, or none of them", () => {
    const { store } = tempStore(manualClock());
    store.createRun(newRun("run-1"));
    const entry = { role: "user" as const, text: "look" };
    const key = "model:run-1/run-1/plan/1/0";

    // Its last write, a transcript entry of a run the store does not know, fails.
    expect(() =>
      store.commitStep("run-1", {
        events: [started("run-1")],
        journal: [{ key, value: { reply: 1 } }],
        transcripts: [
          { stageExecutionId: "run-1/plan/1", key: "k1", entry },
          { stageExecutionId: "ghost/plan/1", key: "k1", entry },
        ],
      }),
    ).toThrow();
    expect(store.lastSeq("run-1")).toBe(0);
    expect(store.get(key, z.unknown())).toBeUndefined();
    expect(store.transcriptRows("run-1/plan/1")).toEqual([]);

    store.commitStep("run-1", {
      events: [started("run-1")],
      journal: [{ key, value: { reply: 1 } }],
      transcripts: [{ stageExecutionId: "run-1/plan/1", key: "k1", entry }],
    });
    expect(store.lastSeq("run-1")).toBe(1);
    expect(store.transcriptRows("run-1/plan/1")).toEqual([{ key: "k1", entry }]);
  });

  it("records the step's events with their seq and time, and returns them as recorded", () => {
    const { store } = tempStore(manualClock());
    store.createRun(newRun("run-1"));

    const recorded = store.commitStep("run-1", { events: [started("run-1"), turn("run-1", 1)] });

    expect(recorded).toEqual([
      { seq: 1, at: "2030-01-01T00:00:00.000Z", ...started("run-1") },
      { seq: 2, at: "2030-01-01T00:00:00.000Z", ...turn("run-1", 1) },
    ]);
    expect(store.auditOf("run-1")).toEqual(recorded);
  });

  it("numbers each run's events gaplessly from 1 across many steps", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-a"));
    store.createRun(newRun("run-b"));
    for (let step = 1; step <= 50; step++) {
      store.commitStep("run-a", { events: [turn("run-a", step), turn("run-a", step)] });
      if (step % 2 === 0) store.commitStep("run-b", { events: [turn("run-b", step)] });
      store.commitStep("run-a", { events: [] });
    }

    expect(store.auditOf("run-a").map((event) => event.seq)).toEqual(range(1, 100));
    expect(store.auditOf("run-b").map((event) => event.seq)).toEqual(range(1, 25));
  });

  it("continues the sequence in a store opened later on the same file", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [started("run-1"), turn("run-1", 1)] });
    store.close();

    const reopened = openStore(path);
    const recorded = reopened.commitStep("run-1", { events: [turn("run-1", 2)] });
    expect(recorded.map((event) => event.seq)).toEqual([3]);
    expect(reopened.auditOf("run-1").map((event) => event.seq)).toEqual([1, 2, 3]);
  });

  it("reads the audit log after a given seq", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [1, 2, 3, 4].map((n) => turn("run-1", n)) });
    expect(store.auditOf("run-1", 2).map((event) => event.payload)).toEqual([
      { turn: 3 },
      { turn: 4 },
    ]);
  });

  it.each([
    ["payload", "json('[1]')", "its payload is not a JSON object"],
    ["type", "'Nonsense'", 'its type "Nonsense" is not an audit event type'],
  ])(
    "reads a row with a damaged %s back in its place, marked, and the rest as written",
    (column, value, problem) => {
      const { store, path } = tempStore();
      store.createRun(newRun("run-1"));
      store.commitStep("run-1", { events: [1, 2, 3].map((n) => turn("run-1", n)) });
      const db = new Database(path);
      db.exec("DROP TRIGGER steps_events_no_update");
      // The step's events share their moment: stored as {shared, events}.
      db.prepare(
        `UPDATE steps SET events = json_set(events, '$.events[1].${column}', ${value})`,
      ).run();
      db.close();
      const events = store.auditOf("run-1");
      expect(events.map((event) => event.payload)).toEqual([{ turn: 1 }, {}, { turn: 3 }]);
      expect(events.map((event) => event.damaged)).toEqual([
        undefined,
        `run run-1's audit event 2: ${problem}`,
        undefined,
      ]);
    },
  );

  it("replaces the snapshot, stamped with the run's definition hash unless the step gives one", () => {
    const clock = manualClock();
    const { store } = tempStore(clock);
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { snapshot: { value: "plan" }, events: [] });
    clock.advance(1000);
    store.commitStep("run-1", { snapshot: { value: "build" }, events: [] });

    expect(okValue(store.getSnapshot("run-1"))).toEqual({
      snapshot: { value: "build" },
      definitionHash: "hash-1",
      stagechartVersion: VERSION,
      updatedAt: "2030-01-01T00:00:01.000Z",
    });
    store.commitStep("run-1", {
      snapshot: { value: "build" },
      definitionHash: "hash-2",
      events: [],
    });
    expect(okValue(store.getSnapshot("run-1")).definitionHash).toBe("hash-2");
  });

  it("keeps the snapshot when a step brings none", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { snapshot: { value: "plan" }, events: [] });
    store.commitStep("run-1", { events: [turn("run-1", 1)] });
    expect(okValue(store.getSnapshot("run-1")).snapshot).toEqual({ value: "plan" });
  });

  it.each([
    ["a BigInt", { count: 1n }],
    ["a circular value", circular()],
  ])("writes nothing of a step whose snapshot (%s) cannot be serialized", (_, snapshot) => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { snapshot: { value: "plan" }, events: [started("run-1")] });

    expect(() =>
      store.commitStep("run-1", { snapshot, events: [turn("run-1", 1), turn("run-1", 2)] }),
    ).toThrow(TypeError);

    expect(store.auditOf("run-1").map((event) => event.type)).toEqual(["RunStarted"]);
    expect(okValue(store.getSnapshot("run-1")).snapshot).toEqual({ value: "plan" });
    expect(store.commitStep("run-1", { events: [turn("run-1", 1)] })[0]?.seq).toBe(2);
  });

  it("writes nothing of a step when one of its later events cannot be serialized", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    const unserializable = { ...turn("run-1", 2), payload: { tokens: 1n } };

    expect(() =>
      store.commitStep("run-1", { snapshot: {}, events: [turn("run-1", 1), unserializable] }),
    ).toThrow(TypeError);

    expect(store.auditOf("run-1")).toEqual([]);
    expect(failure(store.getSnapshot("run-1")).code).toBe("Session/NoSnapshot");
  });

  it("throws RunNotFound for an unknown run, and refuses another run's events", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    expect(() => store.commitStep("nope", { events: [] })).toThrow(
      expect.objectContaining({ code: "Session/RunNotFound" }),
    );
    expect(() => store.commitStep("run-1", { events: [turn("run-2", 1)] })).toThrow(
      expect.objectContaining({ code: "Session/AuditRunMismatch" }),
    );
    expect(store.auditOf("run-1")).toEqual([]);
  });
});

describe("reading a snapshot back", () => {
  it("is NoSnapshot before the first one, with the audit log readable", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [started("run-1")] });

    expect(failure(store.getSnapshot("run-1")).code).toBe("Session/NoSnapshot");
    expect(store.auditOf("run-1")).toHaveLength(1);
  });

  it("is SnapshotCorrupt when the stored text is not JSON, with the audit log readable", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { snapshot: { value: "plan" }, events: [started("run-1")] });
    const db = new Database(path);
    db.prepare(LATEST_SNAPSHOT_UPDATE).run('{"value": "pl', "run-1");
    db.close();

    const error = failure(store.getSnapshot("run-1"));
    expect(error.code).toBe("Session/SnapshotCorrupt");
    expect(error.context).toMatchObject({ runId: "run-1" });
    expect(store.auditOf("run-1").map((event) => event.type)).toEqual(["RunStarted"]);
  });
});

describe("the audit log, in the steps' rows", () => {
  it("refuses to change or delete a recorded event", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [started("run-1")] });
    const db = new Database(path);
    expect(() => db.exec("UPDATE steps SET events = '[]'")).toThrow(/append-only/);
    expect(() => db.exec("DELETE FROM steps")).toThrow(/append-only/);
    db.close();
    expect(store.auditOf("run-1").map((event) => event.type)).toEqual(["RunStarted"]);
  });
});

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

function circular(): Record<string, unknown> {
  const value: Record<string, unknown> = { value: "build" };
  value.self = value;
  return value;
}

describe("a store from when each audit event was a row of its own (schema 8)", () => {
  it("moves every event into its step's row, keeping seqs, damage and events after the last step", () => {
    const path = join(tempDir(), "runs.db");
    const db = storeFileAtSchema(8, path);
    for (const statement of AUDIT_ROWS_AT_SCHEMA_8) db.exec(statement);
    db.close();

    const store = openStore(path);
    expectMigratedAudit(store.auditOf("run-1"), store.auditOf("run-2"), store.stepsOf("run-1"));
    expect(store.auditOf("run-1", 2).map((event) => event.seq)).toEqual([3, 4]);
    const [next] = store.commitStep("run-1", { events: [started("run-1")] });
    expect(next?.seq).toBe(5);
  });
});
