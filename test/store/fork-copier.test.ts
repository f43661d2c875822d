import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { AuditEventInput } from "../../src/events/audit.js";
import * as z from "../../src/zod.js";
import { failure, manualClock, newRun, okValue, tempStore } from "./support/temp-store.js";

const forked = (runId: string): AuditEventInput => ({
  type: "RunForked",
  runId,
  payload: { from: { runId: "run-1", step: 1 } },
});
const entry = (text: string) => ({ role: "user" as const, text });

describe("forking a run in the store", () => {
  it("copies what the run had recorded by the step, under the new run's keys, and nothing later", () => {
    const { store } = tempStore(manualClock());
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", {
      events: [],
      snapshot: { value: "plan" },
      journal: [{ key: "model:run-1/run-1/plan/1/0", value: { reply: "first" } }],
      transcripts: [{ stageExecutionId: "run-1/plan/1", key: "k0", entry: entry("system") }],
    });
    store.commitStep("run-1", {
      events: [],
      snapshot: { value: "execute" },
      journal: [{ key: "model:run-1/run-1/plan/1/1", value: { reply: "second" } }],
      transcripts: [{ stageExecutionId: "run-1/plan/1", key: "k1", entry: entry("later") }],
    });

    okValue(
      store.forkRun("run-1", 1, newRun("run-2"), {
        events: [forked("run-2")],
        snapshot: { value: "plan" },
      }),
    );
    expect(store.get("model:run-2/run-2/plan/1/0", z.unknown())).toEqual({ reply: "first" });
    expect(store.get("model:run-2/run-2/plan/1/1", z.unknown())).toBeUndefined();
    expect(store.read("run-2/plan/1")).toEqual([entry("system")]);
    expect(store.auditOf("run-2").map((e) => e.type)).toEqual(["RunForked"]);
    expect(store.getSnapshot("run-2")).toMatchObject({
      ok: true,
      value: { snapshot: { value: "plan" } },
    });
    // The source keeps all it had.
    expect(store.get("model:run-1/run-1/plan/1/1", z.unknown())).toEqual({ reply: "second" });
    expect(store.read("run-1/plan/1")).toHaveLength(2);
  });

  it("refuses a step committed before the store kept what a fork copies, writing nothing", () => {
    const { store, path } = tempStore(manualClock());
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [], snapshot: { value: "plan" } });
    const db = new Database(path);
    db.prepare("UPDATE steps SET journal_mark = NULL, transcript_mark = NULL").run();
    db.close();
    const refused = store.forkRun("run-1", 1, newRun("run-2"), { events: [forked("run-2")] });
    expect(failure(refused).code).toBe("Session/ForkUnavailable");
    expect(store.getRun("run-2").ok).toBe(false);
  });
});
