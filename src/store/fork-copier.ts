import type Database from "better-sqlite3";
import type { StepEntries, StoredEntries, StoredJournal } from "./step-entries.js";
import { STEP_KEY } from "./step-keys.js";

/**
 * What a run had recorded up to one of its steps, for a new run (a fork): journal entries, so
 * recorded calls are not made again, and transcripts, so conversations go on, each under the
 * new run's keys: the run id is renamed where a key names it (`model:<run>/<run>/plan/1/0`,
 * `<run>/plan/1`); run ids have no `/`, so it is always a whole segment. They are the entries
 * of the source's steps up to that one, and become those of the fork's first step, copied as
 * stored, undecoded: an entry that does not read back fails the fork's reads of its stage
 * execution, as it fails the source's, not the fork.
 */
export class ForkCopier {
  private readonly forkable: Database.Statement<[string, number], 1>;

  constructor(
    db: Database.Database,
    private readonly entries: StepEntries,
  ) {
    // A step stored before stores kept what a fork copies has no marks (see history.ts).
    this.forkable = db
      .prepare<[string, number], 1>(
        `SELECT 1 FROM steps WHERE id = ${STEP_KEY} AND journal_mark IS NOT NULL`,
      )
      .pluck();
  }

  /** None for a step committed before stores kept them, or no such step. */
  entriesAt(source: string, step: number, target: string): StoredEntries | undefined {
    if (this.forkable.get(source, step) === undefined) return undefined;
    const { journal, transcripts } = this.entries.stored(source, step);
    const rename = (key: string) => renamed(key, source, target);
    return {
      journal: journal.map(([key, ...value]) => [rename(key), ...value] as StoredJournal),
      transcripts: transcripts.map(([stageExecutionId, key, entry, resultOf]) => {
        const execution = target + stageExecutionId.slice(source.length);
        return resultOf === undefined
          ? [execution, key, entry]
          : [execution, key, entry, rename(resultOf)];
      }),
    };
  }
}

/** A journal key of run `source` as the same key of run `target`. */
const renamed = (key: string, source: string, target: string): string =>
  key.replaceAll(`:${source}/`, `:${target}/`).replaceAll(`/${source}/`, `/${target}/`);
