import type { AuditEvent } from "./audit.js";

/**
 * What a run tells its watchers as it goes (`run.events()`): its audit events, in order, and —
 * between them, live only, never stored — the pieces of each model reply as they stream.
 */
export type RunEvent = AuditEvent | ModelDelta;

/** A piece of a model's reply as it streams: of its text, or of a tool call's arguments (JSON). */
export type ReplyDelta =
  | { kind: "text"; text: string }
  | { kind: "tool-call"; toolCallId: string; tool: string; input: string };

/**
 * A piece of the reply a stage's model call is receiving, before the call ends and its turn is
 * audited (`ModelTurn`). The pieces of one call, in order, add up to its reply's text and its
 * tool calls' arguments, with every key the host knows removed. Not stored: a resumed run
 * answered from its journal sends none.
 */
export type ModelDelta = {
  type: "ModelDelta";
  runId: string;
  stageId: string;
  stageExecutionId: string;
  attempt: number;
  /** The turn the reply will be audited as. */
  turn: number;
} & ReplyDelta;

export const isModelDelta = (event: RunEvent): event is ModelDelta => event.type === "ModelDelta";
