import type Database from "better-sqlite3";

/** One committed step of a run, as the step history keeps it. */
export interface StepRecord {
  step: number;
  /** The last audit event the step added (the previous step's when it added none). */
  lastSeq: number;
  at: string;
}

/** A snapshot as a step stores it: its JSON and what it was made by. */
export interface SnapshotWrite {
  snapshot: string;
  /** Absent: the run's own. */
  definitionHash: string | null;
  stagechartVersion: string;
}

/**
 * Every committed step of every run, with the snapshot it led to (issue 13; the visualizer's
 * scrubber). Each snapshot is stored here only: the run's latest, which resume needs, is its last
 * step with a snapshot.
 */
export class StepHistory {
  private readonly insert: Database.Statement<{
    runId: string;
    lastSeq: number;
    at: string;
    snapshot: string | null;
    definitionHash: string | null;
    stagechartVersion: string | null;
  }>;
  private readonly list: Database.Statement<[string], StepRecord>;
  private readonly snapshotAt: Database.Statement<[string, number], string>;

  constructor(db: Database.Database) {
    this.insert = db.prepare(
      `INSERT INTO steps (run_id, step, last_seq, at, snapshot, journal_mark, transcript_mark,
         definition_hash, stagechart_version)
       VALUES (@runId, (SELECT COALESCE(MAX(step), 0) + 1 FROM steps WHERE run_id = @runId),
               @lastSeq, @at, @snapshot, (SELECT COALESCE(MAX(rowid), 0) FROM journal),
               (SELECT COALESCE(MAX(rowid), 0) FROM transcripts),
               CASE WHEN @snapshot IS NOT NULL THEN COALESCE(@definitionHash,
                 (SELECT definition_hash FROM runs WHERE run_id = @runId)) END,
               @stagechartVersion)`,
    );
    this.list = db.prepare<[string], StepRecord>(
      "SELECT step, last_seq AS lastSeq, at FROM steps WHERE run_id = ? ORDER BY step",
    );
    this.snapshotAt = db
      .prepare<[string, number], string>(
        `SELECT snapshot FROM steps WHERE run_id = ? AND step <= ? AND snapshot IS NOT NULL
         ORDER BY step DESC LIMIT 1`,
      )
      .pluck();
  }

  /** Called inside the store's step transaction, so a step and its history row go together. */
  record(runId: string, lastSeq: number, at: string, snapshot: SnapshotWrite | undefined): void {
    this.insert.run({
      runId,
      lastSeq,
      at,
      snapshot: snapshot?.snapshot ?? null,
      definitionHash: snapshot?.definitionHash ?? null,
      stagechartVersion: snapshot?.stagechartVersion ?? null,
    });
  }

  stepsOf(runId: string): StepRecord[] {
    return this.list.all(runId);
  }

  /** The snapshot the run had after step k: that step's, or the last one committed before it. */
  snapshotAtStep(runId: string, step: number): unknown {
    const text = this.snapshotAt.get(runId, step);
    return text === undefined ? undefined : JSON.parse(text);
  }
}
