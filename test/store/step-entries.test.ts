import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it, vi } from "vitest";
import { TOOL_RUN } from "../../src/runtime/journal.js";
import { StepEntries } from "../../src/store/step-entries.js";
import * as z from "../../src/zod.js";
import {
  failure,
  newRun,
  okValue,
  openStore,
  storeFileAtSchema,
  tempDir,
  tempStore,
} from "./support/temp-store.js";

const forked = (runId: string) => ({ type: "RunForked" as const, runId, payload: {} });
const user = (text: string) => ({ role: "user" as const, text });
const toolRun = { ok: true, result: { text: "file body" }, durationMs: 3 };
const toolEntry = {
  role: "tool" as const,
  toolCallId: "c1",
  tool: "Read",
  result: toolRun.result,
  isError: false,
};

/**
 * A store at schema 10, when the journal and transcripts were tables of their own. run-1's
 * steps have marks (the tables' highest rowids when each was committed): step 1 covers journal
 * row 1 and transcript row 1, step 2 journal rows 2–3 and transcript row 2 (a tool entry whose
 * result its step's journal entry holds), step 3 nothing new; journal row 5 and transcript row 3
 * came after its last step. run-2's only step predates the marks.
 */
const ENTRIES_AT_SCHEMA_10 = [
  `INSERT INTO runs (run_id, pipeline_id, status, created_at, updated_at, definition_hash,
     stagechart_version, options) VALUES
     ('run-1', 'plan-build', 'suspended', 't0', 't0', 'hash-1', '0.1.0', '{}'),
     ('run-2', 'plan-build', 'suspended', 't0', 't9', 'hash-1', '0.1.0', '{}')`,
  `INSERT INTO journal (rowid, key, run_id, value, recorded_at) VALUES
     (1, 'model:run-1/run-1/plan/1/0', 'run-1', '{"reply":"first"}', 't1'),
     (2, 'model:run-1/run-1/plan/1/1', 'run-1', '{"reply":"second"}', 't2'),
     (3, 'tool:run-1/c1', 'run-1', '${JSON.stringify(toolRun)}', 't2'),
     (4, 'model:run-2/run-2/plan/1/0', 'run-2', '{"reply":"old"}', 't1'),
     (5, 'model:run-1/run-1/plan/1/2', 'run-1', '{cut', 't4')`,
  `INSERT INTO transcripts (rowid, stage_execution_id, key, run_id, entry, result_of) VALUES
     (1, 'run-1/plan/1', 'k0', 'run-1', '{"role":"user","text":"system"}', NULL),
     (2, 'run-1/plan/1', 'k1', 'run-1', '${JSON.stringify({ ...toolEntry, result: null })}',
      'tool:run-1/c1'),
     (3, 'run-1/plan/1', 'k2', 'run-1', '{"role":"user","text":"late"}', NULL)`,
  `INSERT INTO steps (run_id, step, last_seq, at, snapshot, journal_mark, transcript_mark,
     definition_hash, stagechart_version) VALUES
     ('run-1', 1, 0, 't1', '{"value":"plan"}', 1, 1, 'hash-1', '0.1.0'),
     ('run-1', 2, 0, 't2', '{"value":"execute"}', 4, 2, 'hash-1', '0.1.0'),
     ('run-1', 3, 0, 't3', NULL, 4, 2, NULL, NULL),
     ('run-2', 1, 0, 't1', '{"value":"plan"}', NULL, NULL, 'hash-1', '0.1.0')`,
];

function storeAtSchema10(): string {
  const path = join(tempDir(), "runs.db");
  const db = storeFileAtSchema(10, path);
  for (const statement of ENTRIES_AT_SCHEMA_10) db.exec(statement);
  db.close();
  return path;
}

describe("a store from when the journal and transcripts were tables (schema 10)", () => {
  it("reads every entry back from the step rows they moved to", () => {
    const store = openStore(storeAtSchema10());
    expect(store.journalOf("run-1")).toEqual([
      { key: "model:run-1/run-1/plan/1/0", value: '{"reply":"first"}' },
      { key: "model:run-1/run-1/plan/1/1", value: '{"reply":"second"}' },
      { key: "tool:run-1/c1", value: JSON.stringify(toolRun) },
      // A damaged value stays damaged, never taken for an absent one.
      { key: "model:run-1/run-1/plan/1/2", value: "{cut" },
    ]);
    expect(store.transcriptsOf("run-1")).toEqual([
      { stageExecutionId: "run-1/plan/1", key: "k0", entry: user("system") },
      { stageExecutionId: "run-1/plan/1", key: "k1", entry: toolEntry },
      { stageExecutionId: "run-1/plan/1", key: "k2", entry: user("late") },
    ]);
    expect(store.get("tool:run-1/c1", TOOL_RUN)).toEqual(toolRun);
    // Whatever shape it is asked for, even any.
    for (const shape of [z.object({}), z.unknown()])
      expect(() => store.get("model:run-1/run-1/plan/1/2", shape)).toThrow(
        expect.objectContaining({ code: "Session/StoreCorrupt" }),
      );
    expect(store.get("model:run-2/run-2/plan/1/0", z.unknown())).toEqual({ reply: "old" });
    // What came after the last step is a step of its own, so no earlier step takes it.
    expect(store.stepsOf("run-1").map(({ step, at }) => [step, at])).toEqual([
      [1, "t1"],
      [2, "t2"],
      [3, "t3"],
      [4, "t3"],
    ]);
    expect(store.stepsOf("run-2").map(({ step, at }) => [step, at])).toEqual([
      [1, "t1"],
      [2, "t9"],
    ]);
    expect(okValue(store.getRun("run-2")).updatedAt).toBe("t9");
  });

  it("resumes from one read of the journal: a transcript's tool results are not looked up again", () => {
    const store = openStore(storeAtSchema10());
    const lookups = vi.spyOn(StepEntries.prototype, "journalValue");
    try {
      const entries = store.entriesOf("run-1");
      expect(entries.transcriptRows("run-1/plan/1")).toEqual([
        { key: "k0", entry: user("system") },
        { key: "k1", entry: toolEntry },
        { key: "k2", entry: user("late") },
      ]);
      expect(lookups).not.toHaveBeenCalled();
    } finally {
      lookups.mockRestore();
    }
  });

  it("forks a step with what it had recorded by then, and nothing recorded after it", () => {
    const store = openStore(storeAtSchema10());
    okValue(store.forkRun("run-1", 1, newRun("at-1"), { events: [forked("at-1")] }));
    expect(store.journalOf("at-1").map(({ key }) => key)).toEqual(["model:at-1/at-1/plan/1/0"]);
    expect(store.read("at-1/plan/1")).toEqual([user("system")]);

    okValue(store.forkRun("run-1", 3, newRun("at-3"), { events: [forked("at-3")] }));
    expect(store.journalOf("at-3").map(({ key }) => key)).toEqual([
      "model:at-3/at-3/plan/1/0",
      "model:at-3/at-3/plan/1/1",
      "tool:at-3/c1",
    ]);
    expect(store.read("at-3/plan/1")).toEqual([user("system"), toolEntry]);

    okValue(store.forkRun("run-1", 4, newRun("at-4"), { events: [forked("at-4")] }));
    expect(store.read("at-4/plan/1")).toEqual([user("system"), toolEntry, user("late")]);
    expect(() => store.get("model:at-4/at-4/plan/1/2", z.unknown())).toThrow(
      expect.objectContaining({ code: "Session/StoreCorrupt" }),
    );

    // A step stored before forks were possible still cannot be forked, nor the step its
    // entries moved to: the run had no step to fork from, and still has none.
    for (const step of [1, 2]) {
      const refused = store.forkRun("run-2", step, newRun("old"), { events: [forked("old")] });
      expect(failure(refused).code).toBe("Session/ForkUnavailable");
    }
  });

  it("goes on: a new step is numbered after the moved ones, and the entries stay append-only", () => {
    const path = storeAtSchema10();
    const store = openStore(path);
    const key = "model:run-1/run-1/plan/1/3";
    store.commitStep("run-1", {
      events: [],
      journal: [{ key, value: { reply: "next" } }],
      transcripts: [{ stageExecutionId: "run-1/plan/1", key: "k3", entry: user("next") }],
    });
    expect(store.stepsOf("run-1").map(({ step }) => step)).toEqual([1, 2, 3, 4, 5]);
    expect(store.get(key, z.unknown())).toEqual({ reply: "next" });
    expect(store.read("run-1/plan/1")).toHaveLength(4);
    store.close();
    const db = new Database(path);
    for (const column of ["journal", "transcripts"])
      expect(() => db.exec(`UPDATE steps SET ${column} = NULL`)).toThrow(/append-only/);
    db.close();
  });
});

describe("a step's entries", () => {
  it("are stored in its row: no other table is written", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", {
      events: [],
      journal: [{ key: "tool:run-1/c1", value: toolRun }],
      transcripts: [{ stageExecutionId: "run-1/plan/1", key: "k1", entry: toolEntry }],
    });
    const db = new Database(path, { readonly: true });
    const row = db.prepare("SELECT journal, transcripts FROM steps").get();
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
    db.close();
    // The tool's result is stored once, in the journal entry the transcript entry names.
    expect(row).toEqual({
      journal: JSON.stringify([["tool:run-1/c1", toolRun]]),
      transcripts: JSON.stringify([
        ["run-1/plan/1", "k1", { ...toolEntry, result: null }, "tool:run-1/c1"],
      ]),
    });
    expect(tables).not.toContain("journal");
    expect(tables).not.toContain("transcripts");
  });

  it("name the journal entry holding their tool result, whether the same object or an equal copy", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    const other = { ...toolEntry, toolCallId: "c2", result: { text: "another body" } };
    store.commitStep("run-1", {
      events: [],
      journal: [{ key: "tool:run-1/c1", value: toolRun }],
      transcripts: [
        { stageExecutionId: "run-1/plan/1", key: "k1", entry: toolEntry },
        { stageExecutionId: "run-1/plan/1", key: "k2", entry: structuredClone(toolEntry) },
        { stageExecutionId: "run-1/plan/1", key: "k3", entry: other },
      ],
    });
    const db = new Database(path, { readonly: true });
    const transcripts = db.prepare("SELECT transcripts FROM steps").pluck().get();
    db.close();
    expect(JSON.parse(String(transcripts))).toEqual([
      ["run-1/plan/1", "k1", { ...toolEntry, result: null }, "tool:run-1/c1"],
      ["run-1/plan/1", "k2", { ...toolEntry, result: null }, "tool:run-1/c1"],
      ["run-1/plan/1", "k3", other],
    ]);
  });

  it("must be the step's run's: an entry another run's key names is refused, nothing stored", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    store.createRun(newRun("run-2"));
    const misfiled = {
      events: [],
      journal: [{ key: "model:run-2/run-2/plan/1/0", value: { reply: "x" } }],
    };
    expect(() => store.commitStep("run-1", misfiled)).toThrow(
      expect.objectContaining({ code: "Session/EntryRunMismatch" }),
    );
    expect(store.stepsOf("run-1")).toEqual([]);
  });
});

describe("reading one entry back", () => {
  /** run-1 with `steps` steps, each journaling a model call and a transcript entry of its own stage execution. */
  function longRun(steps: number) {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    for (let step = 0; step < steps; step += 1)
      store.commitStep("run-1", {
        events: [],
        journal: [{ key: `model:run-1/run-1/plan/1/${step}`, value: { reply: `reply ${step}` } }],
        transcripts: [
          { stageExecutionId: `run-1/plan/${step % 2}`, key: `k${step}`, entry: user(`${step}`) },
        ],
      });
    return store;
  }

  /** How many JSON texts `read` parses in JS. */
  function parsesDuring(read: () => void): number {
    const parse = vi.spyOn(JSON, "parse");
    try {
      read();
      return parse.mock.calls.length;
    } finally {
      parse.mockRestore();
    }
  }

  it("a journal key is looked up in the store: no other step's entries are decoded", () => {
    const store = longRun(40);
    let value: unknown;
    const parses = parsesDuring(() => {
      value = store.get("model:run-1/run-1/plan/1/7", z.unknown());
    });
    expect(value).toEqual({ reply: "reply 7" });
    expect(parses).toBe(1);
  });

  it("a stage execution's transcript decodes its own entries only", () => {
    const store = longRun(40);
    let entries: unknown[] = [];
    const parses = parsesDuring(() => {
      entries = store.read("run-1/plan/1");
    });
    expect(entries).toHaveLength(20);
    expect(entries).toContainEqual(user("39"));
    // Each of its 20 entries is read from its step's column, then decoded; nothing else.
    expect(parses).toBeLessThanOrEqual(2 * 20);
  });
});

/** Rewrites `part` of a stored entry, as damage on disk would (the steps table is append-only). */
function damageStoredEntry(path: string, part: string, damaged: string): void {
  const db = new Database(path);
  const triggers = db
    .prepare<[], { name: string; sql: string }>(
      "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'steps'",
    )
    .all();
  for (const { name } of triggers) db.exec(`DROP TRIGGER ${name}`);
  db.prepare("UPDATE steps SET transcripts = replace(transcripts, ?, ?)").run(part, damaged);
  for (const { sql } of triggers) db.exec(sql);
  db.close();
}

describe("a durable run's transcripts", () => {
  it("looks for a stage execution's transcript only if the run's steps so far hold some of it", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    const entry = (id: string, key: string) => ({ stageExecutionId: id, key, entry: user(key) });
    for (let turn = 0; turn < 20; turn += 1)
      store.commitStep("run-1", { events: [], transcripts: [entry("run-1/plan/1", `k${turn}`)] });
    const statements = Reflect.get(store, "entries");
    const scans = vi.spyOn(Reflect.get(statements, "ofExecution"), "all");
    const transcribed = vi.spyOn(Reflect.get(statements, "transcribed"), "all");

    const entries = store.entriesOf("run-1");
    // A stage execution the run starts now: no step is read for it, then or after its entries.
    expect(entries.transcriptRows("run-1/build/1")).toEqual([]);
    store.commitStep("run-1", { events: [], transcripts: [entry("run-1/build/1", "b0")] });
    expect(entries.transcriptRows("run-1/review/1")).toEqual([]);
    expect(scans).not.toHaveBeenCalled();
    // One the steps hold: read, all of it.
    expect(entries.transcriptRows("run-1/plan/1")).toHaveLength(20);
    expect(scans).toHaveBeenCalledTimes(1);
    // Which stage executions the steps hold entries of was read once, at the first ask.
    expect(transcribed).toHaveBeenCalledTimes(1);
  });
});

describe("a fork of a run with a damaged entry", () => {
  it("copies the entries as stored: only the damaged entry's stage execution fails its reads", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", {
      events: [],
      snapshot: { value: "plan" },
      definitionHash: "hash-1",
      journal: [{ key: "tool:run-1/c1", value: toolRun }],
      transcripts: [
        { stageExecutionId: "run-1/plan/1", key: "k0", entry: user("kept") },
        { stageExecutionId: "run-1/plan/1", key: "k1", entry: toolEntry },
        { stageExecutionId: "run-1/other/1", key: "k0", entry: user("damaged") },
      ],
    });
    damageStoredEntry(path, '"role":"user","text":"damaged"', '"role":"nobody"');

    okValue(store.forkRun("run-1", 1, newRun("fork-1"), { events: [forked("fork-1")] }));

    expect(store.read("fork-1/plan/1")).toEqual([user("kept"), toolEntry]);
    expect(store.get("tool:fork-1/c1", TOOL_RUN)).toEqual(toolRun);
    expect(() => store.read("fork-1/other/1")).toThrow(
      expect.objectContaining({ code: "Session/StoreCorrupt" }),
    );
  });
});

describe("a run whose transcripts column does not read back", () => {
  it("still reads its journal back to resume; only transcript reads fail, as corrupt", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", {
      events: [],
      journal: [{ key: "model:run-1/run-1/plan/1/0", value: { reply: "first" } }],
      transcripts: [{ stageExecutionId: "run-1/plan/1", key: "k0", entry: user("done") }],
    });
    damageStoredEntry(path, '"text":"done"}]]', '"text":"do');

    const entries = store.entriesOf("run-1");
    expect(entries.journal).toEqual([
      { key: "model:run-1/run-1/plan/1/0", value: JSON.stringify({ reply: "first" }) },
    ]);
    // Every transcript read of the run fails, that of a stage execution it names or not.
    for (const execution of ["run-1/plan/1", "run-1/build/1", "run-1/build/1"])
      expect(() => entries.transcriptRows(execution)).toThrow(
        expect.objectContaining({ code: "Session/StoreCorrupt" }),
      );
  });
});
