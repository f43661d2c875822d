import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { TranscriptEntry } from "../../src/compiler/stage-types.js";
import { modelCallKey, RECORDED_CALL, TOOL_RUN, toolCallKey } from "../../src/runtime/journal.js";
import { newRun, openStore, tempStore } from "./support/temp-store.js";

const ownerOf = (path: string, sql: string): unknown => {
  const db = new Database(path, { readonly: true });
  const runIds = db.prepare(sql).pluck().all();
  db.close();
  return runIds;
};

/** Writes `text` over a column of run-1's step, behind the store's back (past its trigger). */
function damageStep(path: string, column: "journal" | "transcripts", text: string, step = 1) {
  const db = new Database(path);
  db.exec("DROP TRIGGER steps_events_no_update");
  db.prepare(`UPDATE steps SET ${column} = ? WHERE run_id = 'run-1' AND step = ?`).run(text, step);
  db.close();
}

describe("the journal", () => {
  it("gives back what was recorded, after a reopen too, and nothing for an unknown key", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    const key = modelCallKey("run-1", "run-1/plan/1", 0);
    const reply = { reply: { text: "done", calls: [], usage: {} } };
    store.record(key, reply);
    store.close();

    const reopened = openStore(path);
    expect(reopened.get(key, RECORDED_CALL)).toEqual(reply);
    expect(reopened.get(modelCallKey("run-1", "run-1/plan/1", 1), RECORDED_CALL)).toBeUndefined();
  });

  it("keeps the first value recorded under a key: an entry is a fact", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    const key = toolCallKey("run-1", "proposal-7");
    store.record(key, { ok: true, result: "first", durationMs: 1 });
    store.record(key, { ok: true, result: "second", durationMs: 1 });
    expect(store.get(key, TOOL_RUN)).toEqual({ ok: true, result: "first", durationMs: 1 });
  });

  it("files each entry under the run its key names", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-a"));
    store.createRun(newRun("run:b"));
    store.record(modelCallKey("run-a", "run-a/plan/1", 0), 1);
    store.record(toolCallKey("run:b", "p-1"), 2);
    const sql = "SELECT run_id FROM steps WHERE journal IS NOT NULL ORDER BY run_id";
    expect(ownerOf(path, sql)).toEqual(["run-a", "run:b"]);
  });

  it.each([
    ["JSON of another shape", { ok: "yes" }],
    ["null, which must not pass for a call never made", null],
  ])("names an entry that is %s Session/StoreCorrupt, with its key", (_, damage) => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    const key = toolCallKey("run-1", "run-1/plan/1/a1/t1/c0");
    store.record(key, { ok: true, result: "done", durationMs: 1 });
    damageStep(path, "journal", JSON.stringify([[key, damage]]));
    expect(() => store.get(key, TOOL_RUN)).toThrow(
      expect.objectContaining({
        code: "Session/StoreCorrupt",
        message: expect.stringContaining(`journal entry ${key}`),
        context: { key },
      }),
    );
  });

  it("names a step whose entries are not JSON Session/StoreCorrupt: its keys are not taken for absent", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    const key = toolCallKey("run-1", "run-1/plan/1/a1/t1/c0");
    store.record(key, { ok: true, result: "done", durationMs: 1 });
    damageStep(path, "journal", "{cut");
    expect(() => store.get(key, TOOL_RUN)).toThrow(
      expect.objectContaining({
        code: "Session/StoreCorrupt",
        message: expect.stringContaining("journal entries of run run-1's step 1"),
        context: { runId: "run-1", step: 1 },
      }),
    );
  });

  it("refuses an entry for a run the store does not know", () => {
    const { store } = tempStore();
    expect(() => store.record(toolCallKey("ghost", "p-1"), 1)).toThrow(
      expect.objectContaining({ code: "Session/RunNotFound" }),
    );
  });
});

describe("transcripts", () => {
  const user = (text: string): TranscriptEntry => ({ role: "user", text });

  it("reads a stage execution's entries in key order, whatever order they were put in", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    store.put("run-1/plan/1", "000001.000002", user("c"));
    store.put("run-1/plan/1", "000000.000000", { role: "system", text: "a" });
    store.put("run-1/plan/1", "000001.000001", user("b"));
    store.put("run-1/plan/2", "000000.000000", { role: "system", text: "other visit" });

    expect(store.read("run-1/plan/1")).toEqual([
      { role: "system", text: "a" },
      user("b"),
      user("c"),
    ]);
    expect(store.read("run-1/unknown/1")).toEqual([]);
  });

  it("reads only the keys before `before`", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    for (const key of ["a", "b", "c", "d"]) store.put("run-1/plan/1", key, user(key));
    expect(store.read("run-1/plan/1", "c")).toEqual([user("a"), user("b")]);
    expect(store.read("run-1/plan/1", "a")).toEqual([]);
  });

  it("overwrites an entry put again under the same key", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    store.put("run-1/plan/1", "a", user("before restore"));
    store.put("run-1/plan/1", "a", user("after restore"));
    expect(store.read("run-1/plan/1")).toEqual([user("after restore")]);
  });

  it("names a damaged entry Session/StoreCorrupt, with its stage execution and key", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.put("run-1/plan/1", "a", user("fine"));
    store.put("run-1/plan/1", "b", user("to be damaged"));
    damageStep(path, "transcripts", '[["run-1/plan/1","b",{"role":"user"}]]', 2);
    expect(() => store.read("run-1/plan/1")).toThrow(
      expect.objectContaining({
        code: "Session/StoreCorrupt",
        message: expect.stringContaining("transcript entry b of run-1/plan/1"),
      }),
    );
    expect(store.read("run-1/plan/1", "b")).toEqual([user("fine")]);
  });

  it("files entries of nested executions under the top-level run", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.put("run-1/sub/1/plan/1", "a", user("nested"));
    const sql = "SELECT run_id FROM steps WHERE transcripts IS NOT NULL";
    expect(ownerOf(path, sql)).toEqual(["run-1"]);
  });
});
