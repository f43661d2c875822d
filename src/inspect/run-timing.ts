import type { AuditEvent } from "../events/audit.js";

/*
 * How long each part of a run took, read from its audit events alone: the visualizer's duration
 * view (a bar per stage execution, its model calls, tool calls and waits as segments) and the
 * comparison of two runs. The page bundles this file: it imports types only.
 */

/** What a segment of a stage execution's bar is: a model call, a tool call, or a wait for a person. */
export type SegmentKind = "model" | "tool" | "wait";

export interface TimedSegment {
  kind: SegmentKind;
  /** The event it is read from (a call's end, a wait's request): the step shown when it is picked. */
  seq: number;
  type: AuditEvent["type"];
  /** `turn 2 · calls Grep`, `Grep(auth)`, `grant for Edit`. */
  label: string;
  /** Epoch milliseconds. */
  start: number;
  end: number;
  durationMs: number;
}

export interface StageBar {
  stageExecutionId: string;
  stageId: string;
  /** The stage's path without the run id and execution numbers: `code-review/static-analysis`. */
  path: string;
  /** The execution's number among its stage's (`review/2` is the second). */
  execution: number;
  /** The sub-pipeline execution it runs in, if any: that bar is drawn first, spanning its stages'. */
  parent?: string;
  depth: number;
  /**
   * Among the bars of the same parent, the lowest lane free when it starts: sequential stages
   * share lane 0, siblings running at once (a parallel group) each get their own.
   */
  lane: number;
  firstSeq: number;
  lastSeq: number;
  start: number;
  end: number;
  durationMs: number;
  /** `ok`, `fail`, `skip`… (the exit's verdict), `cancelled`, `failed` (init), or `open`. */
  outcome: string;
  segments: TimedSegment[];
  /** The event types of its events (a sub-pipeline's: its stages'). */
  types: AuditEvent["type"][];
}

export interface RunTiming {
  start: number;
  end: number;
  durationMs: number;
  /** In the order the executions started, a sub-pipeline's before its stages. */
  bars: StageBar[];
}

const ENDS_RUN = new Set(["RunCompleted", "RunFailed", "RunCancelled", "RunSuspended"]);
const STARTS_PROCESS = new Set(["RunStarted", "RunResumed", "RunForked", "RunReopened"]);

/**
 * The run's stage executions as timed bars. An execution still open ends at the run's last event,
 * or at `now` while the run is live. A model call's duration is its event's `durationMs`; a run
 * stored before that was recorded gets the time since the execution's previous event instead.
 */
export function runTiming(events: readonly AuditEvent[], now?: number): RunTiming {
  const valid = events.filter((e) => e.damaged === undefined);
  const first = valid[0];
  const last = valid.at(-1);
  if (!first || !last) return { start: 0, end: 0, durationMs: 0, bars: [] };
  const ended = ENDS_RUN.has(last.type);
  // An event audited after the fact (a stage's Setup) carries its own, earlier time.
  let start = time(first);
  let end = ended || now === undefined ? time(last) : Math.max(time(last), now);
  for (const e of valid) {
    start = Math.min(start, time(e));
    end = Math.max(end, time(e));
  }
  const bars = new Map<string, Draft>();
  let resumedAt = start;
  for (const e of valid) {
    if (STARTS_PROCESS.has(e.type)) resumedAt = time(e);
    if (!e.stageExecutionId) continue;
    const bar = bars.get(e.stageExecutionId) ?? newDraft(e);
    bars.set(e.stageExecutionId, bar);
    addEvent(bar, e, resumedAt);
  }
  const timed = [...bars.values()].map((draft) => finish(draft, end));
  const all = withParents(timed, first.runId);
  assignLanes(all);
  return { start, end, durationMs: end - start, bars: all };
}

/** A duration as people read it: `0 ms`, `12 ms`, `1.24 s`, `2 min 5 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return minutes < 60
    ? `${minutes} min ${seconds} s`
    : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** `run-1/code-review/1/static-analysis/2` → its path `code-review/static-analysis`, number 2 and parent. */
export function executionParts(
  runId: string,
  stageExecutionId: string,
): { path: string; execution: number; parent?: string } {
  const prefix = stageExecutionId.startsWith(`${runId}/`) ? `${runId}/` : "";
  const parts = stageExecutionId.slice(prefix.length).split("/");
  const names = parts.filter((_, i) => i % 2 === 0);
  const execution = Number(parts.at(-1)) || 1;
  const parent = parts.length > 2 ? `${prefix}${parts.slice(0, -2).join("/")}` : undefined;
  return { path: names.join("/"), execution, ...(parent && { parent }) };
}

interface Draft {
  bar: Omit<StageBar, "lane" | "durationMs" | "end" | "outcome"> & {
    end?: number;
    outcome?: string;
  };
  lastAt: number;
  /** Grant requests and ask questions not answered yet, by proposal id (a question: ""). */
  waits: Map<string, AuditEvent>;
}

function newDraft(e: AuditEvent): Draft {
  const id = e.stageExecutionId as string;
  const parts = executionParts(e.runId, id);
  return {
    bar: {
      stageExecutionId: id,
      stageId: e.stageId ?? parts.path.split("/").at(-1) ?? id,
      ...parts,
      depth: parts.path.split("/").length - 1,
      firstSeq: e.seq,
      lastSeq: e.seq,
      start: time(e),
      segments: [],
      types: [],
    },
    lastAt: time(e),
    waits: new Map(),
  };
}

function addEvent(draft: Draft, e: AuditEvent, resumedAt: number): void {
  const { bar } = draft;
  const at = time(e);
  const p = e.payload as Record<string, unknown>;
  bar.lastSeq = e.seq;
  if (!bar.types.includes(e.type)) bar.types.push(e.type);
  const segment = (kind: SegmentKind, label: string, durationMs: number, seq = e.seq) =>
    bar.segments.push({
      kind,
      seq,
      type: e.type,
      label,
      start: at - durationMs,
      end: at,
      durationMs,
    });
  switch (e.type) {
    case "ModelTurn": {
      const measured = typeof p.durationMs === "number" ? p.durationMs : undefined;
      const since = at - Math.max(draft.lastAt, resumedAt);
      segment("model", turnLabel(p), Math.max(0, measured ?? since));
      break;
    }
    case "ToolSucceeded":
    case "ToolFailed":
      segment(
        "tool",
        `${p.tool}(${p.argsSummary ?? ""})${e.type === "ToolFailed" ? " failed" : ""}`,
        typeof p.durationMs === "number" ? p.durationMs : 0,
      );
      break;
    case "GrantRequested":
      draft.waits.set(String(p.proposalId), e);
      break;
    case "InputRequested":
      draft.waits.set("", e);
      break;
    case "ToolApproved":
    case "ToolDenied":
    case "InputAnswered": {
      const key = e.type === "InputAnswered" ? "" : String(p.proposalId);
      const asked = draft.waits.get(key);
      if (asked) {
        draft.waits.delete(key);
        bar.segments.push(waitSegment(asked, at));
      }
      break;
    }
    case "StageExited":
      bar.outcome = String(p.verdict ?? "ok");
      bar.end = at;
      break;
    case "StageCancelled":
      bar.outcome = "cancelled";
      bar.end = at;
      break;
    case "StageInitFailed":
      bar.outcome = "failed";
      bar.end = at;
      break;
  }
  draft.lastAt = at;
}

function waitSegment(asked: AuditEvent, until: number): TimedSegment {
  const p = asked.payload as Record<string, unknown>;
  const start = time(asked);
  return {
    kind: "wait",
    seq: asked.seq,
    type: asked.type,
    label: asked.type === "GrantRequested" ? `grant for ${p.tool}` : "waiting for an answer",
    start,
    end: until,
    durationMs: until - start,
  };
}

function finish(draft: Draft, runEnd: number): StageBar {
  const { bar } = draft;
  const end = bar.end ?? runEnd;
  // A wait nobody answered yet lasts as long as the bar does.
  const open = [...draft.waits.values()].map((asked) => waitSegment(asked, end));
  const segments = [...bar.segments, ...open].sort((a, b) => a.start - b.start || a.seq - b.seq);
  return {
    ...bar,
    end,
    durationMs: end - bar.start,
    outcome: bar.outcome ?? "open",
    segments,
    lane: 0,
  };
}

/**
 * The bars with one for each sub-pipeline execution, which has no events of its own: it spans
 * its stages' bars, and each comes before its stages in the order.
 */
function withParents(bars: StageBar[], runId: string): StageBar[] {
  const byId = new Map(bars.map((b) => [b.stageExecutionId, b]));
  const made = new Set<StageBar>();
  const ensure = (id: string): StageBar => {
    const known = byId.get(id);
    if (known) return known;
    const parts = executionParts(runId, id);
    const parent: StageBar = {
      stageExecutionId: id,
      stageId: parts.path.split("/").at(-1) ?? id,
      ...parts,
      depth: parts.path.split("/").length - 1,
      lane: 0,
      firstSeq: Number.POSITIVE_INFINITY,
      lastSeq: 0,
      start: Number.POSITIVE_INFINITY,
      end: 0,
      durationMs: 0,
      outcome: "ok",
      segments: [],
      types: [],
    };
    byId.set(id, parent);
    made.add(parent);
    return parent;
  };
  for (const bar of bars) {
    let child = bar;
    while (child.parent) {
      const parent = ensure(child.parent);
      // A sub-pipeline execution with events of its own is timed by them.
      if (!made.has(parent)) break;
      parent.firstSeq = Math.min(parent.firstSeq, bar.firstSeq);
      parent.lastSeq = Math.max(parent.lastSeq, bar.lastSeq);
      parent.start = Math.min(parent.start, bar.start);
      parent.end = Math.max(parent.end, bar.end);
      parent.durationMs = parent.end - parent.start;
      for (const type of bar.types) if (!parent.types.includes(type)) parent.types.push(type);
      if (bar.outcome === "open") parent.outcome = "open";
      else if (bar.outcome !== "ok" && parent.outcome === "ok") parent.outcome = bar.outcome;
      child = parent;
    }
  }
  return [...byId.values()].sort((a, b) => a.firstSeq - b.firstSeq || a.depth - b.depth);
}

/** Lanes among the bars of each parent, by the events they span: overlapping ones apart. */
function assignLanes(bars: StageBar[]): void {
  const lanesOf = new Map<string, number[]>();
  for (const bar of bars) {
    const parent = bar.parent ?? "";
    const lastSeqs = lanesOf.get(parent) ?? [];
    lanesOf.set(parent, lastSeqs);
    const free = lastSeqs.findIndex((lastSeq) => lastSeq < bar.firstSeq);
    const lane = free >= 0 ? free : lastSeqs.length;
    lastSeqs[lane] = bar.outcome === "open" ? Number.POSITIVE_INFINITY : bar.lastSeq;
    bar.lane = lane;
  }
}

function turnLabel(p: Record<string, unknown>): string {
  const tools = Array.isArray(p.tools) && p.tools.length ? ` ${p.tools.join(", ")}` : "";
  return `turn ${p.turn} · ${p.outcome}${tools}`;
}

const time = (e: AuditEvent): number => Date.parse(e.at);
