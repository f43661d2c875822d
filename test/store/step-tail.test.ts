import Database from "better-sqlite3";
import { describe, expect, it, vi } from "vitest";
import type { StepCommit } from "../../src/store/index.js";
import { newRun, okValue, openStore, tempStore } from "./support/temp-store.js";

const step = (runId: string, turn: number): StepCommit => ({
  events: [{ type: "ModelTurn", runId, payload: { turn } }],
  snapshot: { value: "plan", turn },
});

/** The run's steps as the file holds them: numbers and last sequence numbers. */
const stepsIn = (path: string, runId: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare("SELECT step, last_seq AS lastSeq FROM steps WHERE run_id = ? ORDER BY step")
      .all(runId);
  } finally {
    db.close();
  }
};

const gapless = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ step: i + 1, lastSeq: i + 1 }));

describe("a run's last step", () => {
  it("is looked up once for a run's commits, not once a commit", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    const statements = Reflect.get(store, "sql") as Record<string, { get: () => unknown }>;
    const lastStep = vi.spyOn(statements.lastStep as { get: () => unknown }, "get");
    const runExists = vi.spyOn(statements.runExists as { get: () => unknown }, "get");

    for (let turn = 1; turn <= 30; turn += 1) store.commitStep("run-1", step("run-1", turn));

    expect(lastStep).toHaveBeenCalledTimes(1);
    expect(runExists).toHaveBeenCalledTimes(1);
    expect(stepsIn(path, "run-1")).toEqual(gapless(30));
  });

  it("is read anew when the run's lease changes hands: steps another store appended come first", () => {
    const { store: first, path } = tempStore();
    const second = openStore(path);
    first.createRun(newRun("run-1"));
    const turns = (store: typeof first, owner: string, from: number) => {
      okValue(store.acquireLease("run-1", owner, 60_000));
      store.commitStep("run-1", step("run-1", from));
      store.commitStep("run-1", step("run-1", from + 1));
      store.releaseLease("run-1", owner);
    };

    turns(first, "first", 1);
    turns(second, "second", 3);
    turns(first, "first", 5);

    expect(stepsIn(path, "run-1")).toEqual(gapless(6));
    expect(first.auditOf("run-1").map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("is read anew when a worker takes a queued run again", () => {
    const { store: first, path } = tempStore();
    const second = openStore(path);
    // A worker takes only a run whose definition the store holds.
    first.saveDefinition("hash-1", { entry: "plan-build.yaml", files: {} });
    first.enqueueRun(newRun("run-1"));
    const turn = (store: typeof first, owner: string, number: number) => {
      expect(store.claimRun(owner, 60_000)?.runId).toBe("run-1");
      store.commitStep("run-1", step("run-1", number));
      expect(store.requeueRun("run-1", owner)).toBe(true);
    };

    turn(first, "first", 1);
    turn(second, "second", 2);
    turn(first, "first", 3);

    expect(stepsIn(path, "run-1")).toEqual(gapless(3));
  });

  it("is not kept from a step whose transaction rolled back", () => {
    const { store, path } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", step("run-1", 1));
    // The step's row is written, then settling a control request no one made fails the
    // transaction: the row is rolled back, and so is the last step kept for it.
    expect(() =>
      store.commitStep("run-1", {
        ...step("run-1", 2),
        controls: [{ id: 404, status: "applied" }],
      }),
    ).toThrow();
    store.commitStep("run-1", step("run-1", 2));

    expect(stepsIn(path, "run-1")).toEqual(gapless(2));
  });

  it("refuses a step another owner numbered first, when this one lost its lease unawares", () => {
    const { store: stale, path } = tempStore();
    const taker = openStore(path);
    stale.createRun(newRun("run-1"));
    okValue(stale.acquireLease("run-1", "stale", 60_000));
    stale.commitStep("run-1", step("run-1", 1));
    // The stale owner is taken for gone; the taker commits before it notices.
    okValue(taker.acquireLease("run-1", "taker", 60_000, () => true));
    taker.commitStep("run-1", step("run-1", 2));

    expect(() => stale.commitStep("run-1", step("run-1", 3))).toThrow(
      expect.objectContaining({ code: "Session/LeaseLost", context: { runId: "run-1", step: 2 } }),
    );
    expect(stepsIn(path, "run-1")).toEqual(gapless(2));
  });
});
