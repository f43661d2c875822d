import type {
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultOutput,
} from "@ai-sdk/provider";
import { z } from "zod";
import type { TranscriptEntry } from "../compiler/stage-types.js";
import type { JsonValue } from "../tools/types.js";
import { decodeRow } from "./persistence.js";

/** Where stage transcripts live: keyed entries per stage execution, never in machine context. */
export interface TranscriptStore {
  put(stageExecutionId: string, key: string, entry: TranscriptEntry): void;
  /** The entries of a stage execution whose keys sort before `before`, in key order. */
  read(stageExecutionId: string, before?: string): TranscriptEntry[];
}

export class MemoryTranscripts implements TranscriptStore {
  private readonly byExecution = new Map<string, Map<string, TranscriptEntry>>();

  put(stageExecutionId: string, key: string, entry: TranscriptEntry): void {
    const entries = this.byExecution.get(stageExecutionId) ?? new Map<string, TranscriptEntry>();
    entries.set(key, entry);
    this.byExecution.set(stageExecutionId, entries);
  }

  read(stageExecutionId: string, before?: string): TranscriptEntry[] {
    const entries = this.byExecution.get(stageExecutionId) ?? new Map<string, TranscriptEntry>();
    return [...entries.keys()]
      .filter((key) => before === undefined || key < before)
      .sort()
      .map((key) => entries.get(key) as TranscriptEntry);
  }
}

const TRANSCRIPT_ENTRY: z.ZodType<TranscriptEntry> = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), text: z.string() }),
  z.object({ role: z.literal("user"), text: z.string() }),
  z.object({
    role: z.literal("assistant"),
    text: z.string(),
    calls: z.array(z.object({ toolCallId: z.string(), tool: z.string(), args: z.json() })),
  }),
  z.object({
    role: z.literal("tool"),
    toolCallId: z.string(),
    tool: z.string(),
    result: z.json(),
    isError: z.boolean(),
  }),
]);

/** A stored transcript entry back as an entry; a damaged one is `Session/StoreCorrupt`. */
export const decodeTranscriptEntry = (
  stageExecutionId: string,
  key: string,
  text: string,
): TranscriptEntry =>
  decodeRow(text, TRANSCRIPT_ENTRY, `transcript entry ${key} of ${stageExecutionId}`, {
    stageExecutionId,
    key,
  });

/** A transcript as an AI SDK prompt; consecutive tool results become one tool message. */
export function toPrompt(entries: readonly TranscriptEntry[]): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Message[] = [];
  for (const entry of entries) {
    switch (entry.role) {
      case "system":
        prompt.push({ role: "system", content: entry.text });
        break;
      case "user":
        prompt.push({ role: "user", content: [{ type: "text", text: entry.text }] });
        break;
      case "assistant":
        prompt.push({
          role: "assistant",
          content: [
            ...(entry.text ? [{ type: "text" as const, text: entry.text }] : []),
            ...entry.calls.map((call) => ({
              type: "tool-call" as const,
              toolCallId: call.toolCallId,
              toolName: call.tool,
              input: call.args,
            })),
          ],
        });
        break;
      case "tool": {
        const part = {
          type: "tool-result" as const,
          toolCallId: entry.toolCallId,
          toolName: entry.tool,
          output: toolOutput(entry.result, entry.isError),
        };
        const last = prompt.at(-1);
        if (last?.role === "tool") last.content.push(part);
        else prompt.push({ role: "tool", content: [part] });
        break;
      }
    }
  }
  return prompt;
}

function toolOutput(result: JsonValue, isError: boolean): LanguageModelV3ToolResultOutput {
  if (isError) {
    return typeof result === "string"
      ? { type: "error-text", value: result }
      : { type: "error-json", value: result };
  }
  return typeof result === "string"
    ? { type: "text", value: result }
    : { type: "json", value: result };
}
