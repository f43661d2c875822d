import type { TranscriptEntry } from "../compiler/stage-types.js";
import { TOOL_RUN } from "../runtime/journal.js";
import type { StepCommit } from "../runtime/persistence.js";
import { decodeRow, storeCorrupt } from "../runtime/stored-rows.js";
import { decodeTranscriptEntry } from "../runtime/transcripts.js";
import { runIdOfExecution } from "./run-ids.js";

/** A transcript row as both stores write it. */
export interface TranscriptWrite {
  stageExecutionId: string;
  key: string;
  runId: string;
  /** The entry's JSON; a tool entry whose result is kept in the journal has `result: null`. */
  entry: string;
  /** The journal key whose tool run holds the entry's result, or null when the entry holds it. */
  resultOf: string | null;
}

/**
 * A tool result is stored once (fewer bytes on disk): a tool entry whose result is, to the byte,
 * the result of a tool run the same step journals refers to that journal entry instead of
 * carrying a second copy. Entries of other steps carry their own.
 */
export function resultReferences(step: Pick<StepCommit, "journal" | "transcripts">) {
  const runs = (step.journal ?? []).filter(
    (each): each is { key: string; value: { result: unknown } } =>
      each.key.startsWith("tool:") && isToolRun(each.value),
  );
  // Most often the entry holds the very result the journal does: no JSON is made for it then.
  const same = new Map(runs.map(({ key, value }) => [value.result, key]));
  let byText: Map<string, string> | undefined;
  /** The journal key holding the entry's result, if the step journaled it. */
  return (entry: TranscriptEntry): string | undefined => {
    if (entry.role !== "tool") return undefined;
    const kept = same.get(entry.result);
    if (kept !== undefined) return kept;
    byText ??= new Map(runs.map(({ key, value }) => [JSON.stringify(value.result), key]));
    return byText.get(JSON.stringify(entry.result));
  };
}

/** A step's transcript rows, each tool result the step journaled stored there only. */
export function transcriptWrites(step: Pick<StepCommit, "journal" | "transcripts">) {
  const resultOf = resultReferences(step);
  return (step.transcripts ?? []).map(({ stageExecutionId, key, entry }) =>
    entryWrite(stageExecutionId, key, entry, resultOf(entry)),
  );
}

const isToolRun = (value: unknown): value is { result: unknown } =>
  typeof value === "object" && value !== null && "result" in value;

/** A transcript row: the entry whole, or without its result when `resultOf` holds it. */
export const entryWrite = (
  stageExecutionId: string,
  key: string,
  entry: TranscriptEntry,
  resultOf?: string,
): TranscriptWrite => ({
  stageExecutionId,
  key,
  runId: runIdOfExecution(stageExecutionId),
  entry: JSON.stringify(resultOf && entry.role === "tool" ? { ...entry, result: null } : entry),
  resultOf: resultOf ?? null,
});

/** A stored transcript row as read, with the journal value its result is kept in, if any. */
export interface TranscriptRead {
  key: string;
  entry: string;
  resultOf: string | null;
  /** The journal value under `resultOf`; null when there is none. */
  resultSource: string | null;
}

/** The entry a row holds, its result put back from the journal entry that keeps it. */
export function entryOf(stageExecutionId: string, row: TranscriptRead): TranscriptEntry {
  const entry = decodeTranscriptEntry(stageExecutionId, row.key, row.entry);
  if (row.resultOf === null) return entry;
  const what = `the journal entry ${row.resultOf} holding the result of transcript entry ${row.key} of ${stageExecutionId}`;
  const context = { stageExecutionId, key: row.key };
  if (row.resultSource === null) throw storeCorrupt(`${what} is missing`, context);
  const run = decodeRow(row.resultSource, TOOL_RUN, what, context);
  return entry.role === "tool" ? { ...entry, result: run.result } : entry;
}
