import type { ErrorCode } from "../error-codes.js";
import type { AuditEvent } from "../events/audit.js";
import { executionParts, runTiming } from "./run-timing.js";
import { tokenUsage } from "./token-usage.js";

/*
 * Two runs of one pipeline side by side: where their paths part, and what each stage cost in
 * each. Read from their audit events and steps alone; the page bundles this file (it imports
 * types and Node-free modules only).
 */

/** What is compared of a run: its record, its audit events and its committed steps. */
export interface ComparedRun {
  run: { runId: string; pipelineId: string; status: string; definitionHash?: string };
  events: readonly AuditEvent[];
  steps: readonly { step: number; lastSeq: number }[];
}

/** One thing a run did that the other may not have: an event, read without its time and ids. */
export interface PathMark {
  seq: number;
  /** The step that stored it. */
  step?: number;
  /** The stage's path (`review`, `code-review/static-analysis`), if a stage's. */
  stage?: string;
  /** `plan: turn 2 · calls Grep`, `plan → execute`, `run done`. */
  text: string;
}

export interface StageFigures {
  executions: number;
  durationMs: number;
  turns: number;
  tokens: number;
}

export interface StageDelta {
  /** The stage's path without execution numbers. */
  stage: string;
  stageId: string;
  /** Absent: the run did not run the stage itself (never, or before it was forked). */
  a?: StageFigures;
  b?: StageFigures;
  /** b − a, where both ran it. */
  durationDeltaMs?: number;
  tokenDelta?: number;
}

export interface RunSide {
  runId: string;
  status: string;
  durationMs: number;
  tokens: number;
  /**
   * The ids of the stages it went through (a fork's source's before the fork included), and the
   * full id of the final state it ended in (`code-review.done`).
   */
  visited: string[];
}

export interface RunDiff {
  pipelineId: string;
  a: RunSide;
  b: RunSide;
  /** One was forked from the other: the two are compared from that step of the source on. */
  forked?: { source: "a" | "b"; step: number; set?: Record<string, unknown> };
  /** The first thing one did that the other did not; undefined when their paths are the same. */
  divergence?: { a?: PathMark; b?: PathMark };
  /** Both ran the same pipeline definition (else a changed file may explain a difference). */
  sameDefinition: boolean;
  stages: StageDelta[];
  durationDeltaMs: number;
  tokenDelta: number;
}

export type CompareOutcome =
  | { ok: true; value: RunDiff }
  | {
      ok: false;
      error: {
        code: Extract<ErrorCode, "Validation/ComparePipelinesDiffer">;
        message: string;
        context: Record<string, unknown>;
      };
    };

/**
 * `a` and `b` compared: the first point where their paths part (stage by stage, so siblings
 * interleaving differently is no difference), per-stage durations and tokens with b − a, and each
 * run's path for the chart. Runs of two pipelines are refused.
 */
export function diffRuns(a: ComparedRun, b: ComparedRun): CompareOutcome {
  if (a.run.pipelineId !== b.run.pipelineId)
    return {
      ok: false,
      error: {
        code: "Validation/ComparePipelinesDiffer",
        message: `run ${a.run.runId} is of pipeline ${a.run.pipelineId} and run ${b.run.runId} of ${b.run.pipelineId}: only runs of the same pipeline compare`,
        context: { a: a.run.runId, b: b.run.runId },
      },
    };
  const forked = forkBetween(a, b);
  const from = (side: "a" | "b") =>
    forked?.source === side ? lastSeqAt(side === "a" ? a : b, forked.step) : 0;
  const marksA = pathMarks(a, from("a"));
  const marksB = pathMarks(b, from("b"));
  const at = marksA.findIndex((mark, i) => mark.key !== marksB[i]?.key);
  const index = at >= 0 ? at : marksB.length > marksA.length ? marksA.length : -1;
  const sideA = side(a, forked?.source === "b" ? prefixOf(b, forked.step) : []);
  const sideB = side(b, forked?.source === "a" ? prefixOf(a, forked.step) : []);
  const stages = stageDeltas(a, b);
  return {
    ok: true,
    value: {
      pipelineId: a.run.pipelineId,
      a: sideA,
      b: sideB,
      ...(forked && { forked }),
      ...(index >= 0 && {
        divergence: {
          ...(marksA[index] && { a: marksA[index].mark }),
          ...(marksB[index] && { b: marksB[index].mark }),
        },
      }),
      sameDefinition: a.run.definitionHash === b.run.definitionHash,
      stages,
      durationDeltaMs: sideB.durationMs - sideA.durationMs,
      tokenDelta: sideB.tokens - sideA.tokens,
    },
  };
}

/** Which run was forked from the other, at which step, with which ctx changes. */
function forkBetween(a: ComparedRun, b: ComparedRun): RunDiff["forked"] {
  for (const [fork, source, name] of [
    [b, a, "a"],
    [a, b, "b"],
  ] as const) {
    const opening = fork.events.find((e) => e.type === "RunForked");
    const from = opening?.payload.from as { runId?: string; step?: number } | undefined;
    if (from?.runId === source.run.runId && typeof from.step === "number") {
      const set = opening?.payload.set as Record<string, unknown> | undefined;
      return { source: name, step: from.step, ...(set && { set }) };
    }
  }
  return undefined;
}

const lastSeqAt = (run: ComparedRun, step: number): number =>
  run.steps.find((s) => s.step === step)?.lastSeq ?? 0;

/** The source's events up to the step a fork was made at: the fork's history before its own. */
const prefixOf = (source: ComparedRun, step: number): readonly AuditEvent[] =>
  source.events.filter((e) => e.seq <= lastSeqAt(source, step));

function side(run: ComparedRun, before: readonly AuditEvent[]): RunSide {
  const visited = new Set<string>();
  for (const e of [...before, ...run.events]) {
    if (e.stageId) visited.add(e.stageId);
    const { pipelineId, to, kind } = e.payload as {
      pipelineId?: string;
      to?: unknown;
      kind?: string;
    };
    if (e.type === "SMTransition" && kind === "terminal" && pipelineId === run.run.pipelineId)
      visited.add(`${pipelineId}.${to}`);
  }
  return {
    runId: run.run.runId,
    status: run.run.status,
    durationMs: runTiming(run.events).durationMs,
    tokens: tokenUsage(run.events).total.totalTokens,
    visited: [...visited],
  };
}

interface KeyedMark {
  key: string;
  mark: PathMark;
}

/**
 * The run's path after `afterSeq` as marks, grouped by stage execution in the order each began
 * (a run-level mark, a transition or the run's end, stands alone where it happened): siblings
 * of a parallel group whose events interleave differently give the same list.
 */
function pathMarks(run: ComparedRun, afterSeq: number): KeyedMark[] {
  const groups = new Map<string, KeyedMark[]>();
  for (const e of run.events) {
    if (e.seq <= afterSeq || e.damaged !== undefined) continue;
    const described = describe(e);
    if (!described) continue;
    const parts = e.stageExecutionId ? executionParts(e.runId, e.stageExecutionId) : undefined;
    const execution = parts && `${parts.path}#${parts.execution}`;
    const group = execution ?? `run ${e.seq}`;
    const step = run.steps.find((s) => s.lastSeq >= e.seq)?.step;
    const mark: PathMark = {
      seq: e.seq,
      ...(step !== undefined && { step }),
      ...(parts && { stage: parts.path }),
      text: parts ? `${parts.path}: ${described.text}` : described.text,
    };
    const list = groups.get(group) ?? [];
    groups.set(group, list);
    list.push({ key: `${execution ?? "run"}|${described.key}`, mark });
  }
  return [...groups.values()].flat();
}

/** What an event says of the path (its key for comparing, its text), or nothing for its bookkeeping. */
function describe(e: AuditEvent): { key: string; text: string } | undefined {
  const p = e.payload as Record<string, unknown>;
  const list = (v: unknown) => (Array.isArray(v) ? v.join(" + ") : String(v));
  switch (e.type) {
    case "StageSetup":
      return { key: "entered", text: "entered" };
    case "ModelTurn": {
      const tools = Array.isArray(p.tools) && p.tools.length ? ` ${p.tools.join(", ")}` : "";
      const text = `turn ${p.turn} · ${p.outcome}${tools}`;
      return { key: text, text };
    }
    case "ToolSucceeded":
    case "ToolFailed":
    case "ToolDenied": {
      const verdict =
        e.type === "ToolSucceeded" ? "ok" : e.type === "ToolFailed" ? "failed" : "denied";
      return {
        key: `${p.tool} ${p.argsDigest ?? p.argsSummary} ${verdict}`,
        text: `${p.tool}(${p.argsSummary ?? ""}) ${verdict}`,
      };
    }
    case "InputAnswered": {
      const value = JSON.stringify(p.value);
      return { key: `answered ${value}`, text: `answered ${value}` };
    }
    case "StageExited":
      return { key: `exited ${p.verdict}`, text: `exited ${p.verdict}` };
    case "StageCancelled":
      return { key: "cancelled", text: "cancelled" };
    case "SMTransition": {
      const text = `${list(p.from)} → ${list(p.to)}`;
      return { key: `${p.pipelineId} ${text}`, text };
    }
    case "RunCompleted":
    case "RunFailed":
    case "RunCancelled":
    case "RunSuspended": {
      const text = `run ${e.type.slice(3).toLowerCase()}`;
      return { key: text, text };
    }
    default:
      return undefined;
  }
}

/** Per stage (by path), what each run spent on it itself, in the order the stages first ran. */
function stageDeltas(a: ComparedRun, b: ComparedRun): StageDelta[] {
  const figuresA = stageFigures(a);
  const figuresB = stageFigures(b);
  const stages = [...new Set([...figuresA.keys(), ...figuresB.keys()])];
  return stages.map((stage) => {
    const inA = figuresA.get(stage);
    const inB = figuresB.get(stage);
    return {
      stage,
      stageId: stage.split("/").at(-1) ?? stage,
      ...(inA && { a: inA }),
      ...(inB && { b: inB }),
      ...(inA &&
        inB && {
          durationDeltaMs: inB.durationMs - inA.durationMs,
          tokenDelta: inB.tokens - inA.tokens,
        }),
    };
  });
}

function stageFigures(run: ComparedRun): Map<string, StageFigures> {
  const figures = new Map<string, StageFigures>();
  const of = (stage: string) => {
    const known = figures.get(stage) ?? { executions: 0, durationMs: 0, turns: 0, tokens: 0 };
    figures.set(stage, known);
    return known;
  };
  for (const bar of runTiming(run.events).bars) {
    const figure = of(bar.path);
    figure.executions++;
    figure.durationMs += bar.durationMs;
    figure.turns += bar.segments.filter((s) => s.kind === "model").length;
  }
  for (const stage of tokenUsage(run.events).stages)
    of(executionParts(run.run.runId, stage.stageExecutionId).path).tokens += stage.totalTokens;
  return figures;
}
