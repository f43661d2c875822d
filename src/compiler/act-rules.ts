import { hash } from "node:crypto";
import type { StageDefinition } from "../definitions/stage.js";
import type { JsonValue } from "../tools/types.js";
import {
  batchRejectionEntries,
  completionAcceptedEntry,
  refusalEntry,
  schemaRejectionEntry,
  steeringEntry,
} from "./stage-entries.js";
import type { ProposedCall, TokenUsage, TranscriptEntry, TurnOutcome } from "./stage-types.js";
import { parseToolArguments } from "./tool-arguments.js";

/** A model's reply, reduced to what the Act rules look at. */
export interface ModelReply {
  text: string;
  calls: { toolCallId: string; tool: string; input: string }[];
  usage: TokenUsage;
}

export interface TurnIdentity {
  stageExecutionId: string;
  attempt: number;
  turn: number;
}

export interface ActRuleHelpers {
  /** Errors of a completion payload against completionSchema; empty when it passes. */
  validateCompletion(payload: unknown): string[];
  /** Why the stage refuses a payload that passed the schema (its `refuseCompletion` hook), if it does. */
  refuseCompletion(payload: JsonValue): string | undefined;
  /** The gist of a call's arguments for people and rules (the tool's own summary when known). */
  summarize(tool: string, args: JsonValue): string;
}

/**
 * The Act rules applied to one reply: exactly one completion call → schema
 * check, then the stage's own refusal, if any; the completion call with others, or twice → the whole batch rejected unexecuted;
 * plain text → a steering message; other calls → dispatch.
 */
export function classifyTurn(
  stage: StageDefinition,
  reply: ModelReply,
  identity: TurnIdentity,
  helpers: ActRuleHelpers,
): TurnOutcome {
  const calls = reply.calls.map((call, index) => proposeCall(call, index, identity, helpers));
  const assistant: TranscriptEntry = {
    role: "assistant",
    text: reply.text,
    calls: calls.map(({ toolCallId, tool, args }) => ({ toolCallId, tool, args })),
  };
  const base = { tools: calls.map((c) => c.tool), usage: reply.usage };
  const completions = calls.filter((c) => c.tool === stage.completionTool);

  if (calls.length === 0)
    return { ...base, kind: "text", entries: [assistant, steeringEntry(stage)] };
  if (completions.length > 0 && calls.length > 1) {
    return {
      ...base,
      kind: "batch-rejected",
      entries: [assistant, ...batchRejectionEntries(stage, calls)],
    };
  }
  const [completion] = completions;
  if (completion) {
    const errors = completion.parseError
      ? [completion.parseError]
      : helpers.validateCompletion(completion.args);
    if (errors.length > 0) {
      return {
        ...base,
        kind: "completion-invalid",
        errors,
        entries: [assistant, schemaRejectionEntry(stage, completion.toolCallId, errors)],
      };
    }
    const refusal = helpers.refuseCompletion(completion.args);
    if (refusal !== undefined) {
      return {
        ...base,
        kind: "completion-refused",
        reason: refusal,
        entries: [assistant, refusalEntry(stage, completion.toolCallId, refusal)],
      };
    }
    return {
      ...base,
      kind: "completion",
      parsed: completion.args,
      entries: [assistant, completionAcceptedEntry(stage, completion.toolCallId)],
    };
  }
  return {
    ...base,
    kind: "calls",
    calls: calls.map(({ parseError: _, ...call }) => call),
    entries: [assistant],
  };
}

function proposeCall(
  call: ModelReply["calls"][number],
  index: number,
  { stageExecutionId, attempt, turn }: TurnIdentity,
  helpers: ActRuleHelpers,
): ProposedCall & { parseError?: string } {
  const parsed = parseToolArguments(call.input);
  const args = parsed.ok ? parsed.args : call.input;
  const parseError = parsed.ok ? undefined : parsed.error;
  return {
    // Joined, not templated: a template makes a tree of string pieces (~150 bytes more), which
    // the audit log keeps with the events that name the call.
    proposalId: [stageExecutionId, "/a", attempt, "/t", turn, "/c", index].join(""),
    toolCallId: call.toolCallId,
    tool: call.tool,
    args,
    argsDigest: argsDigest(args),
    argsSummary: helpers.summarize(call.tool, args),
    ...(parseError !== undefined && { parseError }),
  };
}

/** SHA-256 hex of the arguments as JSON with object keys sorted at every depth. */
export function argsDigest(args: JsonValue): string {
  return hash("sha256", canonicalJson(args), "hex");
}

function canonicalJson(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k] as JsonValue)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
