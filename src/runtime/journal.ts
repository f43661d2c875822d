import type { ModelReply } from "../compiler/act-rules.js";
import type { ToolRun } from "../compiler/stage-types.js";
import { ERROR_CLASSES, type ErrorCode, type ErrorView } from "../errors.js";
import * as z from "../zod.js";
import { decodeRow, storeCorrupt } from "./stored-rows.js";

/**
 * Recorded model responses and tool results, keyed by idempotency key
 * (`runId / stageExecutionId / attempt / turn / proposalId`). A call whose result is recorded is
 * never made again: after a restore the recorded result is reused.
 */
export interface Journal {
  /**
   * What was recorded under `key`, undefined when nothing was. A recorded value that is not of
   * the `shape` its call records is `Session/StoreCorrupt`, naming the key: a damaged entry is
   * never taken for an absent one, so its call is not made again.
   */
  get<T>(key: string, shape: z.core.$ZodType<T>): T | undefined;
  record(key: string, value: unknown): void;
  /**
   * Resolves once every write made so far is stored, rejects with the store's failure. Only a
   * store whose writes finish later has it (an owned run on a shared store): a model or tool
   * call awaits it first, so no call is made before the steps that led to it are durable.
   */
  durable?(): Promise<void>;
}

/**
 * Keeps each recorded value itself, not a JSON copy: a tool's output is then held once, shared
 * with the transcript entry that carries it. A read checks it against its shape, which gives
 * back fresh objects and arrays, so the caller cannot change what was recorded.
 */
export class MemoryJournal implements Journal {
  private readonly records = new Map<string, unknown>();

  get<T>(key: string, shape: z.core.$ZodType<T>): T | undefined {
    if (!this.records.has(key)) return undefined;
    const checked = z.safeParse(shape, this.records.get(key));
    if (!checked.success)
      throw storeCorrupt(`journal entry ${key} is not what was written there`, { key });
    return checked.data;
  }

  record(key: string, value: unknown): void {
    this.records.set(key, value);
  }
}

/** A journal entry's text back as the value its call recorded. */
export const decodeJournalEntry = <T>(key: string, text: string, shape: z.core.$ZodType<T>): T =>
  decodeRow(text, shape, `journal entry ${key}`, { key });

/**
 * The n-th model call of a stage execution (failed calls count: a retry is the next call).
 * Keys are joined, not templated: a template makes a tree of string pieces (about 100 bytes
 * more a key), which an in-memory journal keeps for the host's life.
 */
export const modelCallKey = (runId: string, stageExecutionId: string, call: number): string =>
  ["model:", runId, "/", stageExecutionId, "/", call].join("");

export const toolCallKey = (runId: string, proposalId: string): string =>
  ["tool:", runId, "/", proposalId].join("");

/** What the journal keeps of a model call: its reply, or how it failed (replayed the same way). */
export type RecordedCall = { reply: ModelReply } | { failure: ErrorView };

const errorCode = z.custom<ErrorCode>((code) => typeof code === "string" && code.includes("/"));

const errorView: z.ZodMiniType<ErrorView> = z.object({
  class: z.enum(ERROR_CLASSES),
  code: errorCode,
  message: z.string(),
  context: z.record(z.string(), z.unknown()),
});

export const RECORDED_CALL: z.ZodMiniType<RecordedCall> = z.union([
  z.object({
    reply: z.object({
      text: z.string(),
      calls: z.array(z.object({ toolCallId: z.string(), tool: z.string(), input: z.string() })),
      usage: z.object({
        inputTokens: z.optional(z.number()),
        outputTokens: z.optional(z.number()),
        cachedInputTokens: z.optional(z.number()),
      }),
    }),
  }),
  z.object({ failure: errorView }),
]);

export const TOOL_RUN: z.ZodMiniType<ToolRun> = z.object({
  ok: z.boolean(),
  result: z.json(),
  code: z.optional(errorCode),
  durationMs: z.number(),
});
