import { describe, expect, it } from "vitest";
import { StepRecorder } from "../../src/runtime/step-recorder.js";
import * as z from "../../src/zod.js";
import { newRun, tempStore } from "../store/support/temp-store.js";

const KEY = "model:run-1/run-1/plan/1/0";

describe("a durable run's journal", () => {
  it("keeps a key's first value across commits, as the store does", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    const recorder = new StepRecorder(store, "run-1", "hash-1");
    recorder.record(KEY, { reply: "first" });
    recorder.commit();
    recorder.record(KEY, { reply: "second" });
    recorder.commit();

    expect(recorder.get(KEY, z.unknown())).toEqual({ reply: "first" });
    expect(store.get(KEY, z.unknown())).toEqual({ reply: "first" });
  });

  it("keeps the value the store had when the run goes on in a new process", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    store.commitStep("run-1", { events: [], journal: [{ key: KEY, value: { reply: "stored" } }] });
    const recorder = new StepRecorder(store, "run-1", "hash-1");
    recorder.record(KEY, { reply: "again" });
    recorder.commit();

    expect(recorder.get(KEY, z.unknown())).toEqual({ reply: "stored" });
    expect(store.stepsOf("run-1")).toHaveLength(1);
  });
});

describe("a durable run's audit events", () => {
  it("keep the moment an event says it happened, and are stamped when they do not say", () => {
    const { store } = tempStore();
    store.createRun(newRun("run-1"));
    const recorder = new StepRecorder(store, "run-1", "hash-1");
    const before = new Date().toISOString();
    recorder.emit({
      type: "StageSetup",
      runId: "run-1",
      payload: {},
      at: "2030-01-01T00:00:00.000Z",
    });
    recorder.emit({ type: "StageInit", runId: "run-1", payload: {} });
    recorder.commit();

    const [setup, init] = store.auditOf("run-1");
    expect(setup?.at).toBe("2030-01-01T00:00:00.000Z");
    expect(String(init?.at) >= before).toBe(true);
  });
});
