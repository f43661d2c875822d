import type {
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultOutput,
} from "@ai-sdk/provider";
import type { TranscriptEntry } from "../compiler/stage-types.js";
import type { JsonValue } from "../tools/types.js";
import * as z from "../zod.js";
import { decodeRow } from "./stored-rows.js";

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

const TRANSCRIPT_ENTRY: z.ZodMiniType<TranscriptEntry> = z.discriminatedUnion("role", [
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

/** A prompt made earlier and the entries it was made from. */
interface MadePrompt {
  entries: readonly TranscriptEntry[];
  prompt: LanguageModelV3Message[];
  /** Entries before the trailing run of tool results, which a later entry may still extend. */
  settledEntries: number;
  /** The prompt's messages for those entries. */
  settledMessages: number;
}

/**
 * The last prompt made for each transcript, by its scope. A turn's prompt repeats every earlier
 * entry: making all their messages afresh each turn made a turn's cost grow with the transcript,
 * so a prompt whose entries extend the last one's reuses its messages.
 */
const madePrompts = new WeakMap<object, MadePrompt>();

/**
 * A transcript as an AI SDK prompt; consecutive tool results become one tool message. The
 * messages made are kept for the next prompt of the same `scope` (by default the transcript's
 * first entry) as long as the scope lives: a caller whose transcripts outlive their turns (a
 * host's) names a scope that ends with the turns, so a finished stage's prompt is let go.
 */
export function toPrompt(
  entries: readonly TranscriptEntry[],
  scope: object | undefined = entries[0],
): LanguageModelV3Prompt {
  if (entries.length === 0 || scope === undefined) return [];
  const made = madePrompts.get(scope);
  const reused = made && extendsEntries(entries, made.entries) ? made : undefined;
  const prompt = reused ? reused.prompt.slice(0, reused.settledMessages) : [];
  let settledEntries = reused?.settledEntries ?? 0;
  let settledMessages = prompt.length;
  for (let at = settledEntries; at < entries.length; at++) {
    const entry = entries[at] as TranscriptEntry;
    if (entry.role !== "tool" || prompt.at(-1)?.role !== "tool") {
      settledEntries = at;
      settledMessages = prompt.length;
    }
    appendMessage(prompt, entry);
  }
  if (prompt.at(-1)?.role !== "tool") {
    settledEntries = entries.length;
    settledMessages = prompt.length;
  }
  madePrompts.set(scope, { entries, prompt, settledEntries, settledMessages });
  return prompt.slice();
}

/** Whether `entries` begins with every one of `earlier`, the same objects in the same order. */
function extendsEntries(
  entries: readonly TranscriptEntry[],
  earlier: readonly TranscriptEntry[],
): boolean {
  if (earlier.length > entries.length) return false;
  for (let i = 0; i < earlier.length; i++) if (entries[i] !== earlier[i]) return false;
  return true;
}

function appendMessage(prompt: LanguageModelV3Message[], entry: TranscriptEntry): void {
  switch (entry.role) {
    case "system":
      prompt.push({ role: "system", content: entry.text });
      break;
    case "user":
      prompt.push({ role: "user", content: [{ type: "text", text: entry.text }] });
      break;
    case "assistant": {
      const content = [
        ...(entry.text.trim() ? [{ type: "text" as const, text: entry.text }] : []),
        ...entry.calls.map((call) => ({
          type: "tool-call" as const,
          toolCallId: call.toolCallId,
          toolName: call.tool,
          input: call.args,
        })),
      ];
      // Blank text says nothing, and Anthropic refuses a text block without a word in it; a
      // reply with nothing else has nothing to repeat, and Anthropic refuses an empty message
      // (the steering message after it still tells the model what it missed).
      if (content.length > 0) prompt.push({ role: "assistant", content });
      break;
    }
    case "tool": {
      const part = {
        type: "tool-result" as const,
        toolCallId: entry.toolCallId,
        toolName: entry.tool,
        output: toolOutput(entry.result, entry.isError),
      };
      const last = prompt.at(-1);
      // A trailing tool message is this call's own (never a reused one): it may grow in place.
      if (last?.role === "tool") last.content.push(part);
      else prompt.push({ role: "tool", content: [part] });
      break;
    }
  }
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
