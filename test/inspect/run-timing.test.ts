import { describe, expect, it } from "vitest";
import type { AuditEvent, AuditEventType } from "../../src/events/audit.js";
import { executionParts, formatDuration, runTiming } from "../../src/inspect/run-timing.js";
import { demoProject, runCli, storeOf, summaryOf } from "../support/cli.js";
import { openStore } from "../support/live-runs.js";

const T0 = Date.parse("2026-11-25T10:00:00.000Z");

/** Events of run `r` at `ms` after T0, numbered in order. */
function log(
  ...events: Array<[number, AuditEventType, string | undefined, Record<string, unknown>?]>
): AuditEvent[] {
  return events.map(([ms, type, stage, payload = {}], i) => ({
    seq: i + 1,
    at: new Date(T0 + ms).toISOString(),
    type,
    runId: "r",
    ...(stage && { stageId: stage.split("/")[0], stageExecutionId: `r/${stage}` }),
    payload,
  }));
}

async function storedRun(pipeline: string, ...flags: string[]) {
  const project = demoProject();
  const done = await runCli(
    "run",
    pipeline,
    "--task",
    "rename auth to authentication",
    "--root",
    project,
    "--store",
    storeOf(project),
    "--headless",
    "--json",
    ...flags,
  );
  const { runId } = summaryOf(done.stdout);
  const store = openStore(storeOf(project));
  const events = store.auditOf(runId);
  store.close();
  return { runId, events };
}

describe("a run's timing, from its audit events", () => {
  it("times each stage execution from its first event to its exit, with its model and tool calls as segments", () => {
    const events = log(
      [0, "RunStarted", undefined],
      [10, "StageSetup", "plan/1"],
      [20, "CheckGateOutcome", "plan/1"],
      [320, "ModelTurn", "plan/1", { turn: 1, outcome: "calls", tools: ["Grep"], durationMs: 290 }],
      [330, "ToolApproved", "plan/1", { proposalId: "p1", tool: "Grep" }],
      [380, "ToolSucceeded", "plan/1", { tool: "Grep", argsSummary: "auth", durationMs: 45 }],
      [
        580,
        "ModelTurn",
        "plan/1",
        { turn: 2, outcome: "completion", tools: ["submit_plan"], durationMs: 200 },
      ],
      [600, "StageExited", "plan/1", { verdict: "ok" }],
      [610, "RunCompleted", undefined],
    );

    const timing = runTiming(events);

    expect(timing).toMatchObject({ start: T0, end: T0 + 610, durationMs: 610 });
    expect(timing.bars).toHaveLength(1);
    const [plan] = timing.bars;
    expect(plan).toMatchObject({
      stageExecutionId: "r/plan/1",
      stageId: "plan",
      path: "plan",
      execution: 1,
      depth: 0,
      lane: 0,
      firstSeq: 2,
      lastSeq: 8,
      start: T0 + 10,
      end: T0 + 600,
      durationMs: 590,
      outcome: "ok",
    });
    expect(plan?.segments.map((s) => [s.kind, s.label, s.start - T0, s.durationMs, s.seq])).toEqual(
      [
        ["model", "turn 1 · calls Grep", 30, 290, 4],
        ["tool", "Grep(auth)", 335, 45, 6],
        ["model", "turn 2 · completion submit_plan", 380, 200, 7],
      ],
    );
  });

  it("times a model call stored without its duration from the execution's previous event, never from before a resume", () => {
    const events = log(
      [0, "RunStarted", undefined],
      [10, "StageSetup", "plan/1"],
      [110, "ModelTurn", "plan/1", { turn: 1, outcome: "calls", tools: ["Read"] }],
      [120, "RunSuspended", undefined],
      [60_000, "RunResumed", undefined],
      [60_250, "ModelTurn", "plan/1", { turn: 2, outcome: "completion", tools: [] }],
      [60_260, "StageExited", "plan/1", { verdict: "ok" }],
    );

    const [plan] = runTiming(events).bars;

    expect(plan?.segments.map((s) => s.durationMs)).toEqual([100, 250]);
  });

  it("draws the wait for a grant from its request to its answer, and one not answered yet to the bar's end", () => {
    const events = log(
      [0, "RunStarted", undefined],
      [10, "StageSetup", "plan/1"],
      [20, "GrantRequested", "plan/1", { proposalId: "p1", tool: "Edit" }],
      [5_020, "ToolApproved", "plan/1", { proposalId: "p1", tool: "Edit" }],
      [5_030, "GrantRequested", "plan/1", { proposalId: "p2", tool: "Write" }],
      [5_040, "RunSuspended", undefined],
    );

    const [plan] = runTiming(events).bars;

    expect(plan?.outcome).toBe("open");
    expect(plan?.end).toBe(T0 + 5_040);
    expect(plan?.segments.map((s) => [s.kind, s.label, s.durationMs, s.seq])).toEqual([
      ["wait", "grant for Edit", 5_000, 3],
      ["wait", "grant for Write", 10, 5],
    ]);
  });

  it("ends a live run's open stage at now, and an ended run's at its last event", () => {
    const events = log([0, "RunStarted", undefined], [10, "StageSetup", "plan/1"]);

    expect(runTiming(events, T0 + 900).bars[0]).toMatchObject({ end: T0 + 900, outcome: "open" });
    expect(runTiming(events).bars[0]).toMatchObject({ end: T0 + 10 });
    const ended = log(
      [0, "RunStarted", undefined],
      [10, "StageSetup", "plan/1"],
      [20, "RunCancelled", undefined],
    );
    expect(runTiming(ended, T0 + 900)).toMatchObject({ end: T0 + 20 });
    expect(runTiming(ended, T0 + 900).bars[0]).toMatchObject({ end: T0 + 20 });
  });

  it("puts a fail-fast group's siblings in lanes of their own, and the stages before and after in lane 0", async () => {
    const { runId, events } = await storedRun("code-review-parallel");

    const { bars } = runTiming(events);

    expect(bars.map((b) => [b.stageExecutionId, b.lane, b.outcome])).toEqual([
      [`${runId}/plan/1`, 0, "ok"],
      [`${runId}/execute/1`, 0, "ok"],
      [`${runId}/test/1`, 0, "ok"],
      [`${runId}/lint/1`, 1, "ok"],
      [`${runId}/review/1`, 0, "ok"],
    ]);
    for (const bar of bars) {
      const own = events.filter((e) => e.stageExecutionId === bar.stageExecutionId);
      expect(bar.segments.filter((s) => s.kind === "model")).toHaveLength(
        own.filter((e) => e.type === "ModelTurn").length,
      );
      expect(bar.segments.filter((s) => s.kind === "tool")).toHaveLength(
        own.filter((e) => e.type === "ToolSucceeded" || e.type === "ToolFailed").length,
      );
      expect(bar.durationMs).toBe(bar.end - bar.start);
      for (const s of bar.segments) expect(s.durationMs).toBeGreaterThanOrEqual(0);
    }
  });

  it("draws a sub-pipeline's execution as one bar over its stages' bars, which sit one level down", async () => {
    const { runId, events } = await storedRun("machines/pi-release/release");

    const { bars } = runTiming(events);

    const sub = bars.find((b) => b.stageExecutionId === `${runId}/code-review/1`);
    const inner = bars.filter((b) => b.parent === `${runId}/code-review/1`);
    expect(sub).toMatchObject({ stageId: "code-review", path: "code-review", depth: 0 });
    expect(inner.map((b) => [b.path, b.execution, b.depth])).toEqual([
      ["code-review/static-analysis", 1, 1],
      ["code-review/manual-review", 1, 1],
      ["code-review/static-analysis", 2, 1],
      ["code-review/manual-review", 2, 1],
    ]);
    expect(bars.indexOf(sub as never)).toBe(bars.indexOf(inner[0] as never) - 1);
    expect(sub?.start).toBe(Math.min(...inner.map((b) => b.start)));
    expect(sub?.end).toBe(Math.max(...inner.map((b) => b.end)));
    expect(bars.map((b) => b.path)).toEqual([
      "build",
      "code-review",
      "code-review/static-analysis",
      "code-review/manual-review",
      "code-review/static-analysis",
      "code-review/manual-review",
      "publish",
    ]);
  });

  it("reads an execution id's stage path, number and sub-pipeline execution", () => {
    expect(executionParts("run-1", "run-1/review/2")).toEqual({ path: "review", execution: 2 });
    expect(executionParts("run-1", "run-1/code-review/1/static-analysis/3")).toEqual({
      path: "code-review/static-analysis",
      execution: 3,
      parent: "run-1/code-review/1",
    });
  });

  it("says durations as people read them", () => {
    expect([0, 12.4, 999, 1234, 12_345, 125_000, 3_725_000].map(formatDuration)).toEqual([
      "0 ms",
      "12 ms",
      "999 ms",
      "1.23 s",
      "12.3 s",
      "2 min 5 s",
      "1 h 2 min",
    ]);
  });
});
