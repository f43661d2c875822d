import type { OverrideNote } from "../definitions/contract.js";
import type { StageDefinition } from "../definitions/stage.js";
import { type ErrorCode, type ErrorView, StagechartError, toStagechartError } from "../errors.js";
import type { JsonValue } from "../tools/types.js";
import type { ProposedCall, TranscriptEntry } from "./stage-types.js";

/** The transcript entries the Act rules write, as pure functions. */

export function toolResultEntry(
  call: { toolCallId: string; tool: string },
  result: JsonValue,
  isError: boolean,
): TranscriptEntry {
  return { role: "tool", toolCallId: call.toolCallId, tool: call.tool, result, isError };
}

export function errorResult(
  code: ErrorCode,
  message: string,
  context: Record<string, JsonValue> = {},
): JsonValue {
  return { class: code.slice(0, code.indexOf("/")), code, message, context };
}

/**
 * The user turn that opens a stage's conversation, after its system prompt. A model answers a
 * user turn — Anthropic refuses a request without one — and the instructions stay in the
 * system prompt, which outranks what users and tool results say.
 */
export function openingEntry(stage: StageDefinition): TranscriptEntry {
  return {
    role: "user",
    text: `Begin the stage "${stage.name}" as instructed. When the work is done, call \`${stage.completionTool}\` with the result.`,
  };
}

export function steeringEntry(stage: StageDefinition): TranscriptEntry {
  return {
    role: "user",
    text: `Plain text does not end this stage. When you are done, call \`${stage.completionTool}\` with your result; until then, use your tools.`,
  };
}

export function batchRejectionEntries(
  stage: StageDefinition,
  calls: readonly ProposedCall[],
): TranscriptEntry[] {
  const result = errorResult(
    "Validation/CompletionNotAlone",
    `\`${stage.completionTool}\` must be the only tool call in its response, and only once; none of this response's calls were run`,
  );
  return calls.map((call) => toolResultEntry(call, result, true));
}

export function schemaRejectionEntry(
  stage: StageDefinition,
  toolCallId: string,
  errors: string[],
): TranscriptEntry {
  const result = errorResult(
    "Validation/CompletionSchemaMismatch",
    `the \`${stage.completionTool}\` payload does not match its schema; fix it and call \`${stage.completionTool}\` again`,
    { errors },
  );
  return toolResultEntry({ toolCallId, tool: stage.completionTool }, result, true);
}

/** A payload the stage refused although it matched the schema; `reason` is what the model reads. */
export function refusalEntry(
  stage: StageDefinition,
  toolCallId: string,
  reason: string,
): TranscriptEntry {
  const result = errorResult("Validation/CompletionRefused", reason);
  return toolResultEntry({ toolCallId, tool: stage.completionTool }, result, true);
}

export function completionAcceptedEntry(
  stage: StageDefinition,
  toolCallId: string,
): TranscriptEntry {
  return toolResultEntry({ toolCallId, tool: stage.completionTool }, { accepted: true }, false);
}

export function retryEntry(
  attempt: number,
  maxAttempts: number,
  reason: string | undefined,
): TranscriptEntry {
  return {
    role: "user",
    text: `Attempt ${attempt} of ${maxAttempts}. The previous attempt was not accepted${reason ? `: ${reason}` : "."}`,
  };
}

/**
 * The system prompt of a stage execution an override entered: the body, and why the run was
 * moved here, so the model knows (as a retry's reason reaches it) — unless the body already
 * places the reason itself (`{{ctx.override.*}}`).
 */
export function withOverrideNote(
  stage: StageDefinition,
  override: OverrideNote | undefined,
  prompt: string,
): string {
  if (!override) return prompt;
  const placed = stage.template.parts.some(
    (part) => part.kind === "placeholder" && part.path[0] === "ctx" && part.path[1] === "override",
  );
  if (placed) return prompt;
  const from = override.from ? ` from stage ${override.from}` : "";
  return `${prompt}\n\nThis stage was entered by an override${from}. The reason given: ${override.reason}`;
}

export function errorView(
  error: unknown,
  fallback: ErrorCode = "ExtensionHost/LifecycleFailure",
): ErrorView {
  return toStagechartError(error, fallback).toModelView();
}

export function viewOf(
  code: ErrorCode,
  message: string,
  context: Record<string, unknown> = {},
): ErrorView {
  return new StagechartError(code, message, context).toModelView();
}
