import type Database from "better-sqlite3";

/** The highest journal and transcript rowids when a step was committed: what it had recorded. */
export interface StepMarks {
  journal: number;
  transcript: number;
}

type Copy = { source: string; target: string; mark: number };

/**
 * Copies what a run had recorded up to one of its steps to a new run (a fork): journal entries,
 * so recorded calls are not made again, and transcripts, so conversations go on, each under
 * the new run's keys: the run id is renamed where a key names it (`model:<run>/<run>/plan/1/0`,
 * `<run>/plan/1`); run ids have no `/`, so it is always a whole segment.
 */
export class ForkCopier {
  private readonly marks: Database.Statement<[string, number], StepMarks>;
  private readonly journal: Database.Statement<Copy>;
  private readonly transcripts: Database.Statement<Copy>;

  constructor(db: Database.Database) {
    this.marks = db.prepare<[string, number], StepMarks>(
      `SELECT journal_mark AS journal, transcript_mark AS transcript FROM steps
       WHERE run_id = ? AND step = ? AND journal_mark IS NOT NULL`,
    );
    this.journal = db.prepare<Copy>(
      `INSERT INTO journal (key, run_id, value, recorded_at)
       SELECT replace(replace(key, ':' || @source || '/', ':' || @target || '/'),
                      '/' || @source || '/', '/' || @target || '/'),
              @target, value, recorded_at
       FROM journal WHERE run_id = @source AND rowid <= @mark ORDER BY rowid`,
    );
    this.transcripts = db.prepare<Copy>(
      `INSERT INTO transcripts (stage_execution_id, key, run_id, entry, result_of)
       SELECT @target || substr(stage_execution_id, length(@source) + 1), key, @target, entry,
              replace(replace(result_of, ':' || @source || '/', ':' || @target || '/'),
                      '/' || @source || '/', '/' || @target || '/')
       FROM transcripts WHERE run_id = @source AND rowid <= @mark ORDER BY rowid`,
    );
  }

  /** The step's marks; none for a step committed before stores kept them (or no such step). */
  marksOf(runId: string, step: number): StepMarks | undefined {
    return this.marks.get(runId, step);
  }

  copy(source: string, target: string, marks: StepMarks): void {
    this.journal.run({ source, target, mark: marks.journal });
    this.transcripts.run({ source, target, mark: marks.transcript });
  }
}
