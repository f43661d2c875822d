import { describe, expect, it } from "vitest";
import { watched } from "../../src/cli/host-options.js";
import { liveProgress, progressFor } from "../../src/cli/live-progress.js";
import { collect } from "../../src/cli/options.js";
import { elapsed, renderStatus, statusOf } from "../../src/cli/status.js";
import type { AuditEvent, AuditEventType } from "../../src/events/audit.js";
import type { ModelDelta } from "../../src/events/run-events.js";
import { callbackInteractor } from "../../src/runtime/interactors.js";
import { CLEAR_LINE, withoutColour } from "../support/cli.js";

let seq = 0;
function ev(
  type: AuditEventType,
  stage?: string,
  payload: Record<string, unknown> = {},
): AuditEvent {
  return {
    seq: ++seq,
    at: "2026-01-01T00:00:00.000Z",
    type,
    runId: "r1",
    ...(stage && { stageId: stage, stageExecutionId: `r1/${stage}/1` }),
    payload,
  };
}

const call = (tool: string, proposalId: string) => ({ tool, argsSummary: "x", proposalId });

/** Two parallel stages: test makes a call, lint is denied one and approved another. */
const PARALLEL: AuditEvent[] = [
  ev("RunStarted", undefined, { pipelineId: "p" }),
  ev("StageSetup", "test"),
  ev("StageSetup", "lint"),
  ev("ModelTurn", "test", { turn: 1, outcome: "tools", tools: ["Grep"] }),
  ev("ToolApproved", "test", { ...call("Grep", "a"), source: "envelope" }),
  ev("ToolSucceeded", "test", call("Grep", "a")),
  ev("ModelTurn", "lint", { turn: 1, outcome: "tools", tools: ["Edit"] }),
  ev("GrantRequested", "lint", call("Edit", "b")),
  ev("ToolDenied", "lint", { ...call("Edit", "b"), source: "headless", code: "X/Y" }),
  ev("ModelTurn", "lint", { turn: 2, outcome: "tools", tools: ["Read"] }),
];

describe("the live status line (pure)", () => {
  it("shows each running stage's turns and tool calls, approvals, denials and elapsed time", () => {
    const status = statusOf(PARALLEL);
    expect(renderStatus(status, 65_000, 200)).toBe(
      "[1m05s] 1 approved, 1 denied · test: 1 turn, 1 tool call · lint: 2 turns, 0 tool calls",
    );
    const afterTest = statusOf([...PARALLEL, ev("StageExited", "test", { verdict: "ok" })]);
    expect(renderStatus(afterTest, 0, 200)).toBe(
      "[0s] 1 approved, 1 denied · lint: 2 turns, 0 tool calls",
    );
    expect(
      statusOf([...PARALLEL, ev("RunCompleted", undefined, { status: "done" })]).running,
    ).toEqual([]);
  });

  it("knows an unanswered grant request, and a stage first seen mid-way (a resumed run)", () => {
    const asking = statusOf([
      ev("ModelTurn", "plan", { turn: 3 }),
      ev("GrantRequested", "plan", call("Edit", "p1")),
    ]);
    expect(asking.asking).toEqual(["p1"]);
    expect(asking.running).toMatchObject([{ stageId: "plan", turns: 3 }]);
    const answered = statusOf([
      ev("GrantRequested", "plan", call("Edit", "p1")),
      ev("GrantIssued", "plan", call("Edit", "p1")),
    ]);
    expect(answered.asking).toEqual([]);
  });

  it("shows the newest words of the reply streaming now, cleared when its turn is audited", () => {
    const piece = (text: string): ModelDelta => ({
      type: "ModelDelta",
      runId: "r1",
      stageId: "lint",
      stageExecutionId: "r1/lint/1",
      attempt: 1,
      turn: 3,
      kind: "text",
      text,
    });
    const call: ModelDelta = {
      ...piece(""),
      kind: "tool-call",
      toolCallId: "c1",
      tool: "Read",
      input: '{"path":"src/auth.ts"}',
    };
    const streaming = statusOf([
      ...PARALLEL,
      piece("The lint rules\nagree, "),
      piece("mostly."),
      call,
    ]);
    expect(renderStatus(streaming, 0, 200)).toBe(
      '[0s] 1 approved, 1 denied · test: 1 turn, 1 tool call · lint: 2 turns, 0 tool calls ▸ The lint rules agree, mostly. Read({"path":"src/auth.ts"}',
    );
    // On a narrow terminal the end of the reply is what shows: its newest words.
    const narrow = renderStatus(streaming, 0, 130);
    expect(narrow).toHaveLength(129);
    expect(narrow.endsWith('Read({"path":"src/auth.ts"}')).toBe(true);
    expect(narrow).toContain("▸ …");
    const turned = statusOf([
      ...PARALLEL,
      piece("The lint rules agree."),
      ev("ModelTurn", "lint", { turn: 3, outcome: "text" }),
    ]);
    expect(renderStatus(turned, 0, 200)).not.toContain("▸");
  });

  it("never wraps: the line is cut to the terminal's width", () => {
    const line = renderStatus(statusOf(PARALLEL), 0, 40);
    expect(line).toHaveLength(39);
    expect(line.endsWith("…")).toBe(true);
    expect([elapsed(999), elapsed(61_000), elapsed(3_725_000)]).toEqual(["0s", "1m01s", "1h02m"]);
  });
});

/** A live progress writing to a fake terminal 80 wide, on a clock that says 2 s have passed. */
function terminal() {
  const writes: string[] = [];
  let clock = 1000;
  const progress = liveProgress(
    { stdout: (t) => writes.push(t), stderr: () => undefined, terminalWidth: () => 80 },
    { now: () => (clock += 1000), tickMs: 60_000 },
  );
  /** The screen's last line, as a terminal would show it after the writes so far. */
  const screen = () => {
    const text = withoutColour(writes.join(""));
    const lines = text.split("\n").map((l) => l.split(CLEAR_LINE).at(-1) ?? "");
    return { lines, bottom: lines.at(-1) ?? "" };
  };
  return { progress, writes, screen };
}

describe("the live progress writer", () => {
  it("keeps the event lines and redraws a status line below them, removed at the end", () => {
    const { progress, writes, screen } = terminal();
    for (const e of PARALLEL.slice(0, 6)) progress.event(e);
    expect(screen().lines).toContain("test   Grep(x) ok");
    expect(screen().bottom).toMatch(
      /^\[\d+s\] 1 approved, 0 denied · test: 1 turn, 1 tool call · lint: 0 turns/,
    );
    // Every event line is written after clearing the status line: it never lands beside it.
    expect(writes.slice(1).every((w) => w.startsWith(CLEAR_LINE))).toBe(true);
    progress.end();
    expect(screen().bottom).toBe("");
    progress.line("waiting: …");
    expect(screen().lines.at(-2)).toBe("waiting: …");
  });

  it("hides the status line while a grant is asked for, and holds event lines while a prompt is open", () => {
    const { progress, screen } = terminal();
    for (const e of PARALLEL.slice(0, 7)) progress.event(e);
    progress.event(ev("GrantRequested", "lint", call("Edit", "b")));
    expect(screen().bottom).toBe("");
    progress.promptOpened();
    const before = screen().lines.length;
    progress.event(ev("ModelTurn", "test", { turn: 2, outcome: "tools", tools: ["Read"] }));
    expect(screen().lines.length).toBe(before);
    expect(screen().bottom).toBe("");
    progress.promptClosed();
    progress.event(ev("ToolApproved", "lint", { ...call("Edit", "b"), source: "grant" }));
    expect(screen().lines).toContain("test turn 2 · calls Read");
    expect(screen().bottom).toMatch(/^\[\d+s\] 2 approved, 0 denied · test: 2 turns/);
  });

  it("is told of a terminal prompt by the interactor it wraps", async () => {
    const told: string[] = [];
    const inner = callbackInteractor("terminal", () => {
      told.push("asked");
      return "approve";
    });
    const interactor = watched(inner, {
      promptOpened: () => told.push("opened"),
      promptClosed: () => told.push("closed"),
    });
    const request = {
      stageId: "s",
      stageExecutionId: "s/1",
      attempt: 1,
      ...call("Edit", "p"),
      argsDigest: "d",
    };
    expect(await interactor.requestGrant?.(request, new AbortController().signal)).toBe("approve");
    expect(told).toEqual(["opened", "asked", "closed"]);
  });

  it("is used only on a terminal and without --json", () => {
    const out: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => out.push(`E${t}`) };
    progressFor(io, false).event(PARALLEL[1] as AuditEvent);
    progressFor({ ...io, terminalWidth: () => 80 }, true).event(PARALLEL[1] as AuditEvent);
    expect(out).toEqual(["test started (r1/test/1)\n", "Etest started (r1/test/1)\n"]);
  });

  it("colours the lines only when the io says so, on a terminal or not", () => {
    const out: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: () => undefined };
    const exited = ev("StageExited", "test", { verdict: "ok" });
    progressFor({ ...io, colour: true }, false).event(exited);
    progressFor({ ...io, colour: false, terminalWidth: () => 80 }, false).event(exited);
    progressFor({ ...io, colour: true, terminalWidth: () => 80 }, false).event(exited);
    const [pipe, plainTerminal, colourTerminal] = out;
    expect(pipe).not.toBe(withoutColour(pipe as string));
    expect(withoutColour(pipe as string)).toBe("test ok\n");
    expect(plainTerminal).toBe(withoutColour(plainTerminal as string));
    expect(plainTerminal).toContain("test ok\n");
    expect(colourTerminal).not.toBe(withoutColour(colourTerminal as string));
  });
});

describe("collect", () => {
  it("is the one accumulator of repeatable options", () => {
    expect(collect("b", collect("a"))).toEqual(["a", "b"]);
  });
});
