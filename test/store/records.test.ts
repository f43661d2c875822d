import { describe, expect, it } from "vitest";
import { fromStepEvents } from "../../src/store/records.js";

const started = { at: "t1", type: "RunStarted", payload: {} };

describe("a step's audit events read back from its row", () => {
  it("reads each stored event back numbered after the previous step's last", () => {
    const events = fromStepEvents("run-1", {
      previous: 4,
      lastSeq: 5,
      events: JSON.stringify([started]),
    });
    expect(events).toEqual([{ seq: 5, at: "t1", type: "RunStarted", runId: "run-1", payload: {} }]);
  });

  it.each([
    ["an array", [1, 2]],
    ["a number", 7],
    ["null", null],
  ])("keeps an event stored as %s in its place, marked as not reading back", (_what, stored) => {
    const events = fromStepEvents("run-1", {
      previous: 0,
      lastSeq: 2,
      events: JSON.stringify([stored, started]),
    });
    expect(events.map((event) => [event.seq, event.type, event.damaged])).toEqual([
      [1, "Unreadable", "run run-1's audit event 1: its step's events do not read back"],
      [2, "RunStarted", undefined],
    ]);
  });

  it("marks an event whose payload is an array, not a JSON object", () => {
    const [event] = fromStepEvents("run-1", {
      previous: 0,
      lastSeq: 1,
      events: JSON.stringify([{ ...started, payload: [1] }]),
    });
    expect(event).toMatchObject({
      type: "RunStarted",
      payload: {},
      damaged: "run run-1's audit event 1: its payload is not a JSON object",
    });
  });
});
