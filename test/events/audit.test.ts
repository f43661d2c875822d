import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryAuditLog } from "../../src/events/audit.js";

afterEach(() => vi.restoreAllMocks());

describe("the in-memory audit log", () => {
  it("numbers each run's events from 1 without gaps and stamps them with the clock's time", () => {
    let now = Date.UTC(2026, 0, 2, 3, 4, 5, 6);
    const log = new MemoryAuditLog(() => now);
    const first = log.emit({ type: "RunStarted", runId: "a", payload: {} });
    log.emit({ type: "RunStarted", runId: "b", payload: {} });
    now += 1;
    const second = log.emit({ type: "RunCompleted", runId: "a", payload: {} });
    expect([first.seq, first.at]).toEqual([1, "2026-01-02T03:04:05.006Z"]);
    expect([second.seq, second.at]).toEqual([2, "2026-01-02T03:04:05.007Z"]);
    expect(log.of("b").map((e) => e.seq)).toEqual([1]);
  });

  it("formats a time once for all the events of the same millisecond", () => {
    const formatted = vi.spyOn(Date.prototype, "toISOString");
    const log = new MemoryAuditLog(() => 1_000);
    for (let i = 0; i < 50; i++) log.emit({ type: "ModelTurn", runId: "a", payload: {} });
    expect(formatted).toHaveBeenCalledTimes(1);
  });

  it("records an event as its seq, its time, then what was emitted, key for key in the order given", () => {
    const log = new MemoryAuditLog(() => Date.UTC(2026, 0, 2));
    const at = "2026-01-01T00:00:00.000Z";
    const stage = {
      type: "ModelTurn" as const,
      runId: "a",
      stageId: "plan",
      stageExecutionId: "a/plan/1",
      attempt: 1,
      payload: { turn: 1 },
    };
    const inputs = [
      stage,
      { ...stage, at },
      { type: "RunStarted" as const, runId: "a", payload: {} },
      { type: "RunStarted" as const, runId: "a", payload: {}, at },
      { type: "StageCancelled" as const, runId: "a", stageId: "plan", payload: {} },
      { runId: "a", type: "RunCompleted" as const, at, payload: {}, attempt: 2 },
    ];
    for (const input of inputs) {
      const event = log.emit(input);
      expect(Object.entries(event)).toEqual(
        Object.entries({ seq: event.seq, at: "2026-01-02T00:00:00.000Z", ...input }),
      );
    }
  });
});
