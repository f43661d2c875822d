import { describe, expect, it } from "vitest";
import type { AuditEventInput } from "../../src/events/audit.js";
import { manualClock, newRun, tempStore } from "./support/temp-store.js";

const turn = (runId: string, turn: number): AuditEventInput => ({
  type: "ModelTurn",
  runId,
  stageId: "plan",
  stageExecutionId: `${runId}/plan/1`,
  attempt: 1,
  payload: { turn },
});

describe("step history", () => {
  it("keeps every committed step with the snapshot it led to, not only the latest", () => {
    const { store } = tempStore(manualClock());
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [turn("run-1", 1)], snapshot: { value: "plan" } });
    store.commitStep("run-1", { events: [turn("run-1", 2), turn("run-1", 3)] });
    store.commitStep("run-1", { events: [], snapshot: { value: "build" } });

    expect(store.stepsOf("run-1").map(({ step, lastSeq }) => ({ step, lastSeq }))).toEqual([
      { step: 1, lastSeq: 1 },
      { step: 2, lastSeq: 3 },
      { step: 3, lastSeq: 3 },
    ]);
    expect(store.snapshotAtStep("run-1", 1)).toEqual({ value: "plan" });
    // A step that committed no snapshot leaves the run as the step before left it.
    expect(store.snapshotAtStep("run-1", 2)).toEqual({ value: "plan" });
    expect(store.snapshotAtStep("run-1", 3)).toEqual({ value: "build" });
    expect(store.getSnapshot("run-1")).toMatchObject({
      ok: true,
      value: { snapshot: { value: "build" } },
    });
  });

  it("keeps each run's steps apart", () => {
    const { store } = tempStore(manualClock());
    store.createRun(newRun("run-1"));
    store.createRun(newRun("run-2"));
    store.commitStep("run-1", { events: [turn("run-1", 1)], snapshot: { value: "a" } });
    store.commitStep("run-2", { events: [turn("run-2", 1)], snapshot: { value: "b" } });
    expect(store.stepsOf("run-2").map((s) => s.step)).toEqual([1]);
    expect(store.snapshotAtStep("run-2", 1)).toEqual({ value: "b" });
    expect(store.stepsOf("run-3")).toEqual([]);
  });
});
