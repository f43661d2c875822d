import { type ErrorCode, StagechartError } from "../errors.js";
import type { JsonValue, ToolOutcome } from "./types.js";

export const success = (output: JsonValue): ToolOutcome => ({ ok: true, output });

export const failure = (
  code: ErrorCode,
  message: string,
  context: Record<string, unknown> = {},
): ToolOutcome => ({ ok: false, error: new StagechartError(code, message, context) });

export const cancelled = (tool: string): ToolOutcome =>
  failure("Cancellation/StageCancelled", `${tool} was cancelled before it finished`, { tool });

export const timedOut = (tool: string, timeoutMs: number): ToolOutcome =>
  failure("ToolTransient/ToolTimeout", `${tool} did not finish within ${timeoutMs} ms`, {
    tool,
    timeoutMs,
  });
