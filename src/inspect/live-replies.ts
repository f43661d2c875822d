import type { ModelDelta } from "../events/run-events.js";

/**
 * The message a run's stream to a local inspect server carries for each piece of a reply. It is
 * stagechart's own, not `@statelyai/inspect`'s: only the local server takes it, and the sanitized
 * stream (what may go to the hosted relay) never holds one.
 */
export const MODEL_DELTA_MESSAGE = "stagechart.model-delta";

/** The reply a stage execution's model call is receiving now, as far as it came. */
export interface StreamingReply {
  runId: string;
  stageId: string;
  stageExecutionId: string;
  attempt: number;
  /** The turn the reply will be audited as. */
  turn: number;
  text: string;
  /** The tool calls being written, each with its arguments so far (JSON, likely unfinished). */
  calls: { toolCallId: string; tool: string; input: string }[];
}

/** Where a stage execution is: its attempt, and the last turn it recorded. */
export interface TurnReached {
  attempt: number;
  turn: number;
}

/** Whether a stage execution that reached `at` has recorded (or given up) a reply's turn. */
export const turnRecorded = (reply: TurnReached, at: TurnReached): boolean =>
  at.attempt > reply.attempt || (at.attempt === reply.attempt && at.turn >= reply.turn);

/**
 * The replies streaming now, one per stage execution: each piece is added to its stage
 * execution's reply, and a piece of a later turn or attempt begins a new one. Pure, so the
 * server and the page keep them alike.
 */
export class StreamingReplies {
  private readonly held = new Map<string, StreamingReply>();

  /** The reply with `delta` added. */
  add(delta: ModelDelta): StreamingReply {
    const known = this.held.get(delta.stageExecutionId);
    const reply =
      known && known.attempt === delta.attempt && known.turn === delta.turn
        ? known
        : {
            runId: delta.runId,
            stageId: delta.stageId,
            stageExecutionId: delta.stageExecutionId,
            attempt: delta.attempt,
            turn: delta.turn,
            text: "",
            calls: [],
          };
    if (delta.kind === "text") reply.text += delta.text;
    else {
      const call = reply.calls.find((c) => c.toolCallId === delta.toolCallId);
      if (call) call.input += delta.input;
      else reply.calls.push({ toolCallId: delta.toolCallId, tool: delta.tool, input: delta.input });
    }
    this.held.set(delta.stageExecutionId, reply);
    return reply;
  }

  get(stageExecutionId: string): StreamingReply | undefined {
    return this.held.get(stageExecutionId);
  }

  /** The replies of a run streaming now. */
  of(runId: string): StreamingReply[] {
    return [...this.held.values()].filter((reply) => reply.runId === runId);
  }

  /** Drops the stage execution's reply (when `at` is given, only one whose turn it recorded). */
  drop(stageExecutionId: string, at?: TurnReached): StreamingReply | undefined {
    const reply = this.held.get(stageExecutionId);
    if (!reply || (at && !turnRecorded(reply, at))) return undefined;
    this.held.delete(stageExecutionId);
    return reply;
  }

  /** In place of every reply held: `replies` (what a page is told as it starts watching). */
  replace(replies: readonly StreamingReply[]): void {
    this.held.clear();
    for (const reply of replies) this.held.set(reply.stageExecutionId, reply);
  }

  get size(): number {
    return this.held.size;
  }
}

/** A reply as far as it came: its text, then each tool call being written, `Tool(arguments`. */
export function replySoFar(reply: StreamingReply): string {
  const calls = reply.calls.map((c) => `${c.tool}(${c.input}`);
  return [reply.text, ...calls].filter((part) => part !== "").join("\n");
}

/** A piece of a reply as sent by a run's stream, checked: never trusted as it comes. */
export function modelDeltaOf(message: unknown): ModelDelta | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const { type, delta } = message as { type?: unknown; delta?: Record<string, unknown> };
  if (type !== MODEL_DELTA_MESSAGE || typeof delta !== "object" || delta === null) return undefined;
  const strings = ["runId", "stageId", "stageExecutionId"].every(
    (field) => typeof delta[field] === "string",
  );
  const numbers = ["attempt", "turn"].every((field) => Number.isSafeInteger(delta[field]));
  if (!strings || !numbers || delta.type !== "ModelDelta") return undefined;
  if (delta.kind === "text" && typeof delta.text === "string") return delta as ModelDelta;
  const call =
    delta.kind === "tool-call" &&
    ["toolCallId", "tool", "input"].every((field) => typeof delta[field] === "string");
  return call ? (delta as ModelDelta) : undefined;
}
