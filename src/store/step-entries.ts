import type Database from "better-sqlite3";
import { byCodeUnit } from "../code-unit-order.js";
import type { RunEntries, StepCommit } from "../runtime/persistence.js";
import type { JournalRow, RunTranscriptRow } from "../runtime/store-port.js";
import { storeCorrupt } from "../runtime/stored-rows.js";
import { runIdOfExecution, runIdOfJournalKey } from "./run-ids.js";
import { inRun, upToStep, WITH_RUN } from "./step-keys.js";
import { entryMisfiled } from "./store-errors.js";
import { entryOf, resultReferences } from "./tool-results.js";

/**
 * A step's journal and transcript entries as its row stores them (migration 11: a
 * commit writes one row, not a row and an index entry per table). `journal`
 * is a JSON array of `[key, value]` in the order recorded; `transcripts` one of
 * `[stageExecutionId, key, entry]`, with a fourth element, the journal key holding the entry's
 * tool result, when the entry does not carry it (see tool-results.ts). Null when the step has none.
 * A journal entry `[key, null, text]` is a value stored before whose text did not parse
 * (migration 11): it reads back as that text, so asking for it fails `Session/StoreCorrupt`.
 */
export interface StepEntryColumns {
  journal: string | null;
  transcripts: string | null;
}

export type StoredJournal = [string, unknown] | [string, null, string];

export type StoredTranscript = [string, string, unknown] | [string, string, unknown, string];

/** Entries as a row stores them, undecoded: `[key, value]` and `StoredTranscript`s. */
export interface StoredEntries {
  journal: StoredJournal[];
  transcripts: StoredTranscript[];
}

/**
 * The step's entries as its row stores them, after `carried` (a fork's copy, already the run's);
 * an entry of another run is refused.
 */
export function toStepEntries(
  runId: string,
  step: StepCommit,
  carried?: StoredEntries,
): StepEntryColumns {
  const journal: unknown[] = carried ? [...carried.journal] : [];
  for (const { key, value } of step.journal ?? []) {
    ownedBy(runId, runIdOfJournalKey(key), key);
    journal.push([key, value]);
  }
  const transcripts: unknown[] = carried ? [...carried.transcripts] : [];
  if (step.transcripts?.length) {
    const resultOf = resultReferences(step);
    for (const { stageExecutionId, key, entry } of step.transcripts) {
      ownedBy(runId, runIdOfExecution(stageExecutionId), stageExecutionId);
      const kept = resultOf(entry);
      transcripts.push(
        kept === undefined || entry.role !== "tool"
          ? [stageExecutionId, key, entry]
          : [stageExecutionId, key, { ...entry, result: null }, kept],
      );
    }
  }
  return { journal: columnText(journal), transcripts: columnText(transcripts) };
}

const columnText = (entries: unknown[]): string | null =>
  entries.length === 0 ? null : JSON.stringify(entries);

function ownedBy(runId: string, entryRunId: string, what: string): void {
  if (entryRunId !== runId) throw entryMisfiled(runId, what);
}

interface StepEntryRow extends StepEntryColumns {
  step: number;
}

/**
 * A column's entries, one row each, found in SQL (a single-key lookup decodes no other
 * row): `json_each` over the column when it is JSON, the entry's first part extracted by path so
 * that an entry of another shape is never read as JSON. An unparsable column yields none.
 */
const entriesIn = (column: "journal" | "transcripts") => `
  FROM steps s, json_each(CASE WHEN json_valid(s.${column}) THEN s.${column} ELSE '[]' END) e
  WHERE ${inRun("s")} AND s.${column} IS NOT NULL
    AND json_extract(s.${column}, e.fullkey || '[0]') = ?`;

/**
 * Reads a run's entries back from its step rows. A journal key's value and a stage execution's
 * transcript are looked up in SQL, touching only their column; `entriesOf` and `recorded` read
 * the run's entries at once, for a caller that reads them all (a durable run, a fork).
 */
export class StepEntries {
  private readonly upTo: Database.Statement<[string, number], StepEntryRow>;
  private readonly journals: Database.Statement<[string], StepEntryRow>;
  private readonly firstValue: Database.Statement<[string, string], JournalValueRow>;
  private readonly ofExecution: Database.Statement<[string, string], StoredTranscriptRow>;
  private readonly firstDamaged: Database.Statement<[string], number | null>;
  private readonly damagedTranscripts: Database.Statement<[string], number | null>;
  private readonly transcribed: Database.Statement<[string], string>;

  /** @internal */
  constructor(db: Database.Database) {
    this.upTo = db.prepare<[string, number], StepEntryRow>(
      `${WITH_RUN} SELECT step, journal, transcripts FROM steps
       WHERE ${inRun()} AND ${upToStep("min(?, 4294967295)")}
         AND (journal IS NOT NULL OR transcripts IS NOT NULL)
       ORDER BY id`,
    );
    this.journals = db.prepare<[string], StepEntryRow>(
      `${WITH_RUN} SELECT step, journal, NULL AS transcripts FROM steps
       WHERE ${inRun()} AND journal IS NOT NULL ORDER BY id`,
    );
    this.firstValue = db.prepare<[string, string], JournalValueRow>(
      `${WITH_RUN} SELECT s.step, CASE json_array_length(e.value)
           WHEN 2 THEN s.journal -> (e.fullkey || '[1]') ELSE e.value ->> 2 END AS value
         ${entriesIn("journal")}
       ORDER BY s.id, e.id LIMIT 1`,
    );
    this.ofExecution = db.prepare<[string, string], StoredTranscriptRow>(
      `${WITH_RUN} SELECT s.step, e.value AS stored ${entriesIn("transcripts")}
       ORDER BY s.id, e.id`,
    );
    this.firstDamaged = db
      .prepare<[string], number | null>(
        `${WITH_RUN} SELECT min(step) FROM steps
         WHERE ${inRun()} AND journal IS NOT NULL AND NOT json_valid(journal)`,
      )
      .pluck();
    this.damagedTranscripts = db
      .prepare<[string], number | null>(
        `${WITH_RUN} SELECT min(step) FROM steps
         WHERE ${inRun()} AND transcripts IS NOT NULL AND NOT json_valid(transcripts)`,
      )
      .pluck();
    this.transcribed = db
      .prepare<[string], string>(
        `${WITH_RUN} SELECT DISTINCT e.value ->> 0 FROM steps s, json_each(s.transcripts) e
         WHERE ${inRun("s")} AND s.transcripts IS NOT NULL`,
      )
      .pluck();
  }

  /**
   * The run's entries, as `entriesOf` tells: its journal, read from the journal columns only; a
   * stage execution's transcript read when asked, so damage in the transcripts of one fails
   * those reads, not the run's. (An unparsable transcripts column names no stage execution: it
   * fails every transcript read of the run. An unparsable journal column fails this read, since
   * a run that went on without the calls it had recorded would make them again.)
   *
   * A transcript is looked for only if the run's steps hold entries of its stage execution:
   * which ones do is read once, at the first transcript asked for, before the reader put any
   * (it reads a transcript before it puts into it; otherwise each stage execution a durable run
   * started would read every step's transcripts).
   */
  entriesOf(runId: string): RunEntries {
    const journal = this.journalOf(runId);
    const decode = decodedWith(journal);
    let transcribed: Set<string> | undefined;
    return {
      journal,
      transcriptRows: (stageExecutionId) => {
        transcribed ??= this.transcribedBy(runId);
        if (!transcribed.has(stageExecutionId)) return [];
        // Tool results come from the journal just read, not from a lookup per entry.
        return this.storedTranscripts(stageExecutionId).map((stored) => {
          const { key, entry } = decode(stored);
          return { key, entry };
        });
      },
    };
  }

  /** The stage executions with transcript entries in the run's steps. */
  private transcribedBy(runId: string): Set<string> {
    const damaged = this.damagedTranscripts.get(runId);
    if (damaged !== null && damaged !== undefined)
      throw unreadableColumn(runId, "transcripts", damaged);
    return new Set(this.transcribed.all(runId));
  }

  /** Every entry the run had recorded by its last step: its transcripts, decoded. */
  transcriptsOf(runId: string): RunTranscriptRow[] {
    const stored = this.stored(runId);
    return stored.transcripts.map(decodedWith(asRows(stored.journal)));
  }

  journalOf(runId: string): JournalRow[] {
    const journal = new Map<string, StoredJournal>();
    for (const row of this.journals.all(runId)) keepFirst(journal, runId, row);
    return asRows([...journal.values()]);
  }

  /**
   * The first value recorded under `key` as its JSON text, found in SQL. When an unparsable
   * journal column comes before it (or it is not found), it may have been there:
   * `Session/StoreCorrupt`.
   */
  journalValue(key: string): string | undefined {
    const runId = runIdOfJournalKey(key);
    const found = this.firstValue.get(runId, key);
    const damaged = this.firstDamaged.get(runId);
    if (damaged !== null && damaged !== undefined && (!found || damaged < found.step))
      throw unreadableColumn(runId, "journal", damaged);
    if (found && found.value === null)
      throw storeCorrupt(`the journal entry ${key} of run ${runId} does not read back`, { runId });
    return found?.value ?? undefined;
  }

  /** One stage execution's entries before `before`, in key order; only those are decoded. */
  transcriptRows(stageExecutionId: string, before?: string): RunTranscriptRow[] {
    return this.storedTranscripts(stageExecutionId, before).map((stored) =>
      decodedTranscript(stored, (key) => this.journalValue(key)),
    );
  }

  /** One stage execution's stored entries before `before`, in key order, still undecoded. */
  private storedTranscripts(stageExecutionId: string, before?: string): StoredTranscript[] {
    const runId = runIdOfExecution(stageExecutionId);
    const damaged = this.damagedTranscripts.get(runId);
    if (damaged !== null && damaged !== undefined)
      throw unreadableColumn(runId, "transcripts", damaged);
    const latest = new Map<string, StoredTranscript>();
    for (const { step, stored } of this.ofExecution.all(runId, stageExecutionId)) {
      const entry = storedTranscript(runId, step, stored);
      if (before === undefined || entry[1] < before) latest.set(entry[1], entry);
    }
    return [...latest.values()].sort(byExecutionThenKey);
  }

  /**
   * The journal as recorded, a key's first value kept (an entry is a fact), each value as its
   * JSON text; the transcripts by stage execution then key, an entry put again replacing the
   * earlier one, still undecoded.
   */
  stored(runId: string, step = Number.MAX_SAFE_INTEGER): StoredEntries {
    const journal = new Map<string, StoredJournal>();
    const transcripts = new Map<string, StoredTranscript>();
    for (const row of this.upTo.all(runId, step)) {
      keepFirst(journal, runId, row);
      for (const stored of columnOf(runId, row, "transcripts") as StoredTranscript[])
        transcripts.set(JSON.stringify([stored[0], stored[1]]), stored);
    }
    return {
      journal: [...journal.values()],
      transcripts: [...transcripts.values()].sort(byExecutionThenKey),
    };
  }
}

/** The row's journal entries added to `journal`, a key's first value kept (an entry is a fact). */
function keepFirst(journal: Map<string, StoredJournal>, runId: string, row: StepEntryRow): void {
  for (const entry of columnOf(runId, row, "journal") as StoredJournal[])
    if (!journal.has(entry[0])) journal.set(entry[0], entry);
}

const asRows = (journal: StoredJournal[]): JournalRow[] =>
  journal.map(([key, value, damaged]) => ({ key, value: damaged ?? JSON.stringify(value) }));

interface JournalValueRow {
  step: number;
  value: string | null;
}

interface StoredTranscriptRow {
  step: number;
  stored: string;
}

/** One stored transcript entry (JSON text) read back; one of another shape is corrupt. */
function storedTranscript(runId: string, step: number, text: string): StoredTranscript {
  const entry: unknown = JSON.parse(text);
  if (isStoredTranscript(entry)) return entry as StoredTranscript;
  const what = `a transcripts entry of run ${runId}'s step ${step} does not read back`;
  throw storeCorrupt(what, { runId, step });
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
  throw unreadableColumn(runId, column, row.step);
}

/** A step's entries column that does not read back: `Session/StoreCorrupt`, naming it. */
const unreadableColumn = (runId: string, column: "journal" | "transcripts", step: number) =>
  storeCorrupt(`the ${column} entries of run ${runId}'s step ${step} do not read back`, {
    runId,
    step,
  });

const isText = (part: unknown): part is string => typeof part === "string";

const isStoredJournal = (entry: unknown): boolean =>
  Array.isArray(entry) &&
  isText(entry[0]) &&
  (entry.length === 2 || (entry.length === 3 && entry[1] === null && isText(entry[2])));

const isStoredTranscript = (entry: unknown): boolean =>
  Array.isArray(entry) &&
  (entry.length === 3 || (entry.length === 4 && isText(entry[3]))) &&
  isText(entry[0]) &&
  isText(entry[1]);

/** A stored transcript entry decoded, its tool result put back from `journal` if kept there. */
const decodedWith = (journal: JournalRow[]) => {
  const values = new Map(journal.map((row) => [row.key, row.value]));
  return (stored: StoredTranscript) => decodedTranscript(stored, (key) => values.get(key));
};

/** A stored transcript entry decoded; `resultSource` gives the journal's text for a key. */
function decodedTranscript(
  [stageExecutionId, key, entry, resultOf]: StoredTranscript,
  resultSource: (key: string) => string | undefined,
): RunTranscriptRow {
  return {
    stageExecutionId,
    key,
    entry: entryOf(stageExecutionId, {
      key,
      entry: JSON.stringify(entry),
      resultOf: resultOf ?? null,
      resultSource: resultOf === undefined ? null : (resultSource(resultOf) ?? null),
    }),
  };
}

const byExecutionThenKey = (a: StoredTranscript, b: StoredTranscript): number =>
  byCodeUnit(a[0], b[0]) || byCodeUnit(a[1], b[1]);
