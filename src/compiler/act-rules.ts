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
  /** Why the model stopped, as the provider said; replies journaled before it was kept lack it. */
  finishReason?: string;
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
 *
 * Each outcome is written out rather than spread from a common part: V8 gives an object literal
 * that opens with the spread of a fresh object a hidden class of its own, and every later read
 * of such outcomes (each turn's actions read several) would then find a class it has not seen.
 */
export function classifyTurn(
  stage: StageDefinition,
  reply: ModelReply,
  identity: TurnIdentity,
  helpers: ActRuleHelpers,
): TurnOutcome {
  const proposals = reply.calls.map((call, index) => proposeCall(call, index, identity, helpers));
  const calls = proposals.map((proposal) => proposal.call);
  const assistant: TranscriptEntry = {
    role: "assistant",
    text: reply.text,
    calls: calls.map(({ toolCallId, tool, args }) => ({ toolCallId, tool, args })),
  };
  const tools = calls.map((c) => c.tool);
  const { usage } = reply;
  const completions = proposals.filter((p) => p.call.tool === stage.completionTool);

  if (calls.length === 0)
    return { tools, usage, kind: "text", entries: [assistant, steeringEntry(stage)] };
  if (completions.length > 0 && calls.length > 1) {
    return {
      tools,
      usage,
      kind: "batch-rejected",
      entries: [assistant, ...batchRejectionEntries(stage, calls)],
    };
  }
  const [completion] = completions;
  if (completion) {
    const { toolCallId, args } = completion.call;
    const errors = completion.parseError
      ? [completion.parseError]
      : helpers.validateCompletion(args);
    if (errors.length > 0) {
      return {
        tools,
        usage,
        kind: "completion-invalid",
        errors,
        entries: [assistant, schemaRejectionEntry(stage, toolCallId, errors)],
      };
    }
    const refusal = helpers.refuseCompletion(args);
    if (refusal !== undefined) {
      return {
        tools,
        usage,
        kind: "completion-refused",
        reason: refusal,
        entries: [assistant, refusalEntry(stage, toolCallId, refusal)],
      };
    }
    return {
      tools,
      usage,
      kind: "completion",
      parsed: args,
      entries: [assistant, completionAcceptedEntry(stage, toolCallId)],
    };
  }
  return { tools, usage, kind: "calls", calls, entries: [assistant] };
}

/** A call as proposed, and why its arguments could not be parsed, if they could not. */
interface Proposal {
  call: ProposedCall;
  parseError: string | undefined;
}

function proposeCall(
  call: ModelReply["calls"][number],
  index: number,
  { stageExecutionId, attempt, turn }: TurnIdentity,
  helpers: ActRuleHelpers,
): Proposal {
  const parsed = parseToolArguments(call.input);
  const args = parsed.ok ? parsed.args : call.input;
  return {
    call: {
      // Joined, not templated: a template makes a tree of string pieces (~150 bytes more),
      // which the audit log keeps with the events that name the call.
      proposalId: [stageExecutionId, "/a", attempt, "/t", turn, "/c", index].join(""),
      toolCallId: call.toolCallId,
      tool: call.tool,
      args,
      argsDigest: argsDigest(args),
      argsSummary: helpers.summarize(call.tool, args),
    },
    parseError: parsed.ok ? undefined : parsed.error,
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
