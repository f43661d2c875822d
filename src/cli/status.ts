import type { AuditEvent } from "../events/audit.js";
import type { ModelDelta, RunEvent } from "../events/run-events.js";

/**
 * What the live status line of a run on a terminal shows, folded from its audit events and the
 * pieces of the replies streaming now.
 */
export interface RunStatus {
  /** The stage executions running now, in the order they started. */
  running: readonly StageActivity[];
  approved: number;
  denied: number;
  /** Grant requests not answered yet (their proposal ids): a prompt may be open. */
  asking: readonly string[];
}

export interface StageActivity {
  stageExecutionId: string;
  stageId: string;
  /** The attempt's model turns so far. */
  turns: number;
  /** Tool calls made (succeeded or failed) in the stage execution. */
  toolCalls: number;
  /** The end of the reply streaming now, on one line; absent between calls. */
  streaming?: string;
}

/** How much of a streaming reply the status keeps: more than any terminal line shows of it. */
const STREAM_TAIL = 240;

export const NO_STATUS: RunStatus = { running: [], approved: 0, denied: 0, asking: [] };

/** The audit events that end a run (in this process). */
export const RUN_ENDS: ReadonlySet<string> = new Set([
  "RunCompleted",
  "RunFailed",
  "RunCancelled",
  "RunSuspended",
]);

/** The status after one more event. Pure. */
export function foldStatus(status: RunStatus, event: RunEvent): RunStatus {
  if (event.type === "ModelDelta") return streamed(status, event);
  const p = event.payload;
  const proposalId = String(p.proposalId);
  const answered = { ...status, asking: status.asking.filter((id) => id !== proposalId) };
  switch (event.type) {
    case "StageExited":
    case "StageCancelled":
      return {
        ...status,
        running: status.running.filter((s) => s.stageExecutionId !== event.stageExecutionId),
      };
    case "ModelTurn":
      return withStage(status, event, ({ streaming: _, ...s }) => ({
        ...s,
        turns: Number(p.turn) || s.turns + 1,
      }));
    case "ToolSucceeded":
    case "ToolFailed":
      return withStage(status, event, (s) => ({ ...s, toolCalls: s.toolCalls + 1 }));
    case "GrantRequested":
      return withStage({ ...status, asking: [...status.asking, proposalId] }, event, (s) => s);
    case "GrantIssued":
      return answered;
    case "ToolApproved":
      return { ...answered, approved: status.approved + 1 };
    case "ToolDenied":
      return { ...answered, denied: status.denied + 1 };
    default:
      if (RUN_ENDS.has(event.type)) return { ...status, running: [], asking: [] };
      return event.type === "StageSetup" ? withStage(status, event, (s) => s) : status;
  }
}

/** The status after a run's events so far. */
export const statusOf = (events: readonly RunEvent[]): RunStatus =>
  events.reduce(foldStatus, NO_STATUS);

/** The stage's streaming reply, a piece longer: its text, or the tool call being written. */
function streamed(status: RunStatus, delta: ModelDelta): RunStatus {
  return withStage(status, delta, (s) => {
    const before =
      delta.kind === "tool-call" && !s.streaming?.includes(`${delta.tool}(`)
        ? `${s.streaming ?? ""} ${delta.tool}(`
        : (s.streaming ?? "");
    const piece = delta.kind === "text" ? delta.text : delta.input;
    const text = `${before}${piece}`.replace(/\s+/g, " ").trimStart();
    return { ...s, streaming: text.length > STREAM_TAIL ? text.slice(-STREAM_TAIL) : text };
  });
}

/** Updates the event's stage execution, adding it if its start was not seen (a resumed run). */
function withStage(
  status: RunStatus,
  event: Pick<AuditEvent, "stageExecutionId" | "stageId">,
  update: (stage: StageActivity) => StageActivity,
): RunStatus {
  const id = event.stageExecutionId;
  if (!id) return status;
  const known = status.running.some((s) => s.stageExecutionId === id);
  const running = known
    ? status.running
    : [
        ...status.running,
        { stageExecutionId: id, stageId: event.stageId ?? id, turns: 0, toolCalls: 0 },
      ];
  return {
    ...status,
    running: running.map((s) => (s.stageExecutionId === id ? update(s) : s)),
  };
}

/**
 * The status line: elapsed time, the approvals and denials so far, and each running stage with
 * its turns and tool calls and the reply streaming now — cut to `width - 1` characters so the
 * terminal never wraps it.
 * `[1m05s] 4 approved, 1 denied · plan: 2 turns, 3 tool calls`
 */
export function renderStatus(status: RunStatus, elapsedMs: number, width: number): string {
  const stages = status.running.map(
    (s) => `${s.stageId}: ${counted(s.turns, "turn")}, ${counted(s.toolCalls, "tool call")}`,
  );
  const line = [
    `[${elapsed(elapsedMs)}] ${status.approved} approved, ${status.denied} denied`,
    ...stages,
  ].join(" · ");
  const room = Math.max(width - 1, 1);
  // The end of a streaming reply fills what room is left: its newest words, as they come.
  const streaming = status.running.find((s) => s.streaming)?.streaming;
  const left = room - line.length - 3;
  if (streaming && left >= 12)
    return `${line} ▸ ${streaming.length <= left ? streaming : `…${streaming.slice(-(left - 1))}`}`;
  return line.length <= room ? line : `${line.slice(0, room - 1)}…`;
}

/** `1 turn`, `2 turns`. */
export const counted = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** `7s`, `1m05s`, `2h03m`. */
export function elapsed(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, "0");
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${pad(seconds % 60)}s`;
  return `${Math.floor(seconds / 3600)}h${pad(Math.floor(seconds / 60) % 60)}m`;
}
