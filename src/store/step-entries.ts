import type Database from "better-sqlite3";
import type { RunEntries, StepCommit } from "../runtime/persistence.js";
import { storeCorrupt } from "../runtime/persistence.js";
import type { JournalRow, RunTranscriptRow } from "./postgres/async-run-store.js";
import { runIdOfExecution, runIdOfJournalKey } from "./run-ids.js";
import { entryMisfiled } from "./store-errors.js";
import { entryOf, resultReferences } from "./tool-results.js";

/**
 * A step's journal and transcript entries as its row stores them (migration 11, issue 14: a
 * commit writes one row and its index entry, not a row and an index entry per table). `journal`
 * is a JSON array of `[key, value]` in the order recorded; `transcripts` one of
 * `[stageExecutionId, key, entry]`, with a fourth element, the journal key holding the entry's
 * tool result, when the entry does not carry it (see tool-results.ts). Null when the step has none.
 */
export interface StepEntryColumns {
  journal: string | null;
  transcripts: string | null;
}

type StoredTranscript = [string, string, unknown] | [string, string, unknown, string];

/** The step's entries as its row stores them; an entry of another run is refused. */
export function toStepEntries(runId: string, step: StepCommit): StepEntryColumns {
  const journal = step.journal ?? [];
  for (const { key } of journal) ownedBy(runId, runIdOfJournalKey(key), key);
  const resultOf = resultReferences(step);
  const transcripts = (step.transcripts ?? []).map(({ stageExecutionId, key, entry }) => {
    ownedBy(runId, runIdOfExecution(stageExecutionId), stageExecutionId);
    const kept = resultOf(entry);
    if (kept === undefined || entry.role !== "tool") return [stageExecutionId, key, entry];
    return [stageExecutionId, key, { ...entry, result: null }, kept];
  });
  return {
    journal: journal.length === 0 ? null : JSON.stringify(journal.map((e) => [e.key, e.value])),
    transcripts: transcripts.length === 0 ? null : JSON.stringify(transcripts),
  };
}

function ownedBy(runId: string, entryRunId: string, what: string): void {
  if (entryRunId !== runId) throw entryMisfiled(runId, what);
}

interface StepEntryRow extends StepEntryColumns {
  step: number;
}

/**
 * Reads a run's entries back from its step rows: one query over the run's steps, so a caller
 * that reads often (a durable run) loads them once and keeps them.
 */
export class StepEntries {
  private readonly upTo: Database.Statement<[string, number], StepEntryRow>;

  constructor(db: Database.Database) {
    this.upTo = db.prepare<[string, number], StepEntryRow>(
      `SELECT step, journal, transcripts FROM steps
       WHERE run_id = ? AND step <= ? AND (journal IS NOT NULL OR transcripts IS NOT NULL)
       ORDER BY step`,
    );
  }

  /** The run's entries, as `entriesOf` tells: a stage execution's decoded when asked. */
  entriesOf(runId: string): RunEntries {
    const { journal, transcripts } = this.stored(runId);
    const decoded = decodedWith(journal);
    const byExecution = new Map<string, StoredTranscript[]>();
    for (const stored of transcripts) {
      const rows = byExecution.get(stored[0]);
      if (rows) rows.push(stored);
      else byExecution.set(stored[0], [stored]);
    }
    return {
      journal,
      transcriptRows: (stageExecutionId) =>
        (byExecution.get(stageExecutionId) ?? []).map((stored) => {
          const { key, entry } = decoded(stored);
          return { key, entry };
        }),
    };
  }

  /** Every entry the run had recorded by `step` (by its last step when not given), decoded. */
  recorded(
    runId: string,
    step?: number,
  ): { journal: JournalRow[]; transcripts: RunTranscriptRow[] } {
    const { journal, transcripts } = this.stored(runId, step);
    return { journal, transcripts: transcripts.map(decodedWith(journal)) };
  }

  journalOf(runId: string): JournalRow[] {
    return this.stored(runId).journal;
  }

  /** One stage execution's entries before `before`, in key order; only those are decoded. */
  transcriptRows(stageExecutionId: string, before?: string): RunTranscriptRow[] {
    const { journal, transcripts } = this.stored(runIdOfExecution(stageExecutionId));
    return transcripts
      .filter(
        ([execution, key]) =>
          execution === stageExecutionId && (before === undefined || key < before),
      )
      .map(decodedWith(journal));
  }

  /**
   * The journal as recorded, a key's first value kept (an entry is a fact), each value as its
   * JSON text; the transcripts by stage execution then key, an entry put again replacing the
   * earlier one, still undecoded.
   */
  private stored(runId: string, step = Number.MAX_SAFE_INTEGER) {
    const journal = new Map<string, string>();
    const transcripts = new Map<string, StoredTranscript>();
    for (const row of this.upTo.all(runId, step)) {
      for (const [key, value] of columnOf(runId, row, "journal")) {
        if (!journal.has(key)) journal.set(key, JSON.stringify(value));
      }
      for (const stored of columnOf(runId, row, "transcripts") as StoredTranscript[])
        transcripts.set(JSON.stringify([stored[0], stored[1]]), stored);
    }
    return {
      journal: [...journal].map(([key, value]) => ({ key, value })),
      transcripts: [...transcripts.values()].sort(byExecutionThenKey),
    };
  }
}

/** A step's entries column read back; one that does not is `Session/StoreCorrupt`, naming it. */
function columnOf(
  runId: string,
  row: StepEntryRow,
  column: "journal" | "transcripts",
): [string, ...unknown[]][] {
  const text = row[column];
  if (text === null) return [];
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch {
    entries = undefined;
  }
  const valid =
    Array.isArray(entries) &&
    entries.every(column === "journal" ? isStoredJournal : isStoredTranscript);
  if (valid) return entries as [string, ...unknown[]][];
  const what = `the ${column} entries of run ${runId}'s step ${row.step} do not read back`;
  throw storeCorrupt(what, { runId, step: row.step });
}

const isText = (part: unknown): part is string => typeof part === "string";

const isStoredJournal = (entry: unknown): boolean =>
  Array.isArray(entry) && entry.length === 2 && isText(entry[0]);

const isStoredTranscript = (entry: unknown): boolean =>
  Array.isArray(entry) &&
  (entry.length === 3 || (entry.length === 4 && isText(entry[3]))) &&
  isText(entry[0]) &&
  isText(entry[1]);

/** A stored transcript entry decoded, its tool result put back from `journal` if kept there. */
const decodedWith = (journal: JournalRow[]) => {
  const values = new Map(journal.map((row) => [row.key, row.value]));
  return ([stageExecutionId, key, entry, resultOf]: StoredTranscript): RunTranscriptRow => ({
    stageExecutionId,
    key,
    entry: entryOf(stageExecutionId, {
      key,
      entry: JSON.stringify(entry),
      resultOf: resultOf ?? null,
      resultSource: resultOf === undefined ? null : (values.get(resultOf) ?? null),
    }),
  });
};

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const byExecutionThenKey = (a: StoredTranscript, b: StoredTranscript): number =>
  compare(a[0], b[0]) || compare(a[1], b[1]);
