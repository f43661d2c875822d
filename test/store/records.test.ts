import { describe, expect, it } from "vitest";
import { StagechartError } from "../../src/errors.js";
import { fromStepEvents, patchedRow, type RunRow, toStepEvents } from "../../src/store/records.js";

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

describe("a step's audit events as its row stores them", () => {
  const turn = { at: "t2", stageId: "plan", stageExecutionId: "run-1/plan/1", attempt: 1 };
  const events = [
    { ...turn, type: "ModelTurn" as const, runId: "run-1", payload: { turn: 1 } },
    { ...turn, type: "ToolProposed" as const, runId: "run-1", payload: { tool: "Read" } },
    { ...turn, at: "t3", type: "ToolApproved" as const, runId: "run-1", payload: { tool: "Read" } },
  ];

  it("keeps the fields every event has alike once, and reads each event back whole", () => {
    const text = toStepEvents(events) as string;
    expect(JSON.parse(text)).toEqual({
      shared: { stageId: "plan", stageExecutionId: "run-1/plan/1", attempt: 1 },
      events: [
        { at: "t2", type: "ModelTurn", payload: { turn: 1 } },
        { at: "t2", type: "ToolProposed", payload: { tool: "Read" } },
        { at: "t3", type: "ToolApproved", payload: { tool: "Read" } },
      ],
    });
    expect(text.length).toBeLessThan(JSON.stringify(events).length * 0.75);
    expect(fromStepEvents("run-1", { previous: 0, lastSeq: 3, events: text })).toEqual(
      events.map((event, i) => ({ seq: i + 1, ...event })),
    );
  });

  it("stores a lone event, or events with nothing alike, as a list", () => {
    expect(JSON.parse(toStepEvents([events[0] as (typeof events)[0]]) as string)).toEqual([
      { ...turn, type: "ModelTurn", payload: { turn: 1 } },
    ]);
    const apart = [
      { at: "t1", type: "RunStarted" as const, runId: "run-1", payload: {} },
      { at: "t2", type: "RunCompleted" as const, runId: "run-1", payload: {} },
    ];
    expect(JSON.parse(toStepEvents(apart) as string)).toEqual([
      { at: "t1", type: "RunStarted", payload: {} },
      { at: "t2", type: "RunCompleted", payload: {} },
    ]);
  });

  it("marks each event of a step whose shared form does not read back", () => {
    const damaged = fromStepEvents("run-1", {
      previous: 0,
      lastSeq: 2,
      events: JSON.stringify({ shared: "plan", events: [{}, {}] }),
    });
    expect(damaged.map((event) => event.damaged)).toEqual([
      expect.stringContaining("do not read back"),
      expect.stringContaining("do not read back"),
    ]);
  });
});

describe("a run's row as a change patches it", () => {
  const row: RunRow = {
    runId: "run-1",
    pipelineId: "plan-build",
    status: "running",
    createdAt: "t0",
    updatedAt: "t1",
    definitionHash: "hash-1",
    stagechartVersion: "0.1.0",
    options: '{"ctx":{"task":"t"}}',
    error: null,
    output: '{"done":true}',
    wakeAt: null,
  };

  it("writes anew only what the change names, its moment always", () => {
    const error = new StagechartError("Session/StoreUnavailable", "gone").toModelView();
    const patched = patchedRow(row, { status: "failed", error }, "t2");
    expect(patched).toEqual({
      ...row,
      status: "failed",
      updatedAt: "t2",
      error: JSON.stringify(error),
    });
    expect(patched.options).toBe(row.options);
  });

  it("clears an output or error the change gives as undefined", () => {
    expect(patchedRow(row, { status: "running", output: undefined }, "t2").output).toBeNull();
  });
});
