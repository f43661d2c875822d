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

/** A transcript entry with the key it is stored under. */
export interface TranscriptRow {
  key: string;
  entry: TranscriptEntry;
}

/**
 * One stage execution's entries in key order. Entries mostly arrive in order, so a put is an
 * append; a read is a binary search and a copy of the prefix it asks for.
 */
export class OrderedTranscript {
  private readonly keys: string[] = [];
  private readonly entries: TranscriptEntry[] = [];

  static of(rows: readonly TranscriptRow[]): OrderedTranscript {
    const transcript = new OrderedTranscript();
    for (const { key, entry } of rows) transcript.put(key, entry);
    return transcript;
  }

  put(key: string, entry: TranscriptEntry): void {
    const at = this.firstAtOrAfter(key);
    if (this.keys[at] === key) this.entries[at] = entry;
    else {
      this.keys.splice(at, 0, key);
      this.entries.splice(at, 0, entry);
    }
  }

  before(cutoff?: string): TranscriptEntry[] {
    return cutoff === undefined
      ? this.entries.slice()
      : this.entries.slice(0, this.firstAtOrAfter(cutoff));
  }

  /** The index of the first key not below `key` (the length when all are). */
  private firstAtOrAfter(key: string): number {
    const last = this.keys.at(-1);
    if (last === undefined || last < key) return this.keys.length;
    let low = 0;
    let high = this.keys.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.keys[middle] as string) < key) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

export class MemoryTranscripts implements TranscriptStore {
  private readonly byExecution = new Map<string, OrderedTranscript>();

  put(stageExecutionId: string, key: string, entry: TranscriptEntry): void {
    let transcript = this.byExecution.get(stageExecutionId);
    if (!transcript) {
      transcript = new OrderedTranscript();
      this.byExecution.set(stageExecutionId, transcript);
    }
    transcript.put(key, entry);
  }

  read(stageExecutionId: string, before?: string): TranscriptEntry[] {
    return this.byExecution.get(stageExecutionId)?.before(before) ?? [];
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
