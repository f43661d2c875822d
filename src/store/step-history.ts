import type Database from "better-sqlite3";
import type { StepRecord } from "../runtime/run-records.js";
import { type StoredSnapshotText, snapshotJson } from "./snapshot-delta.js";
import type { StepEntryColumns } from "./step-entries.js";

/** A snapshot as a step stores it (its JSON or a delta, see snapshot-delta.ts) and what made it. */
export interface SnapshotWrite extends StoredSnapshotText {
  /** Absent: the run's own. */
  definitionHash: string | null;
  stagechartVersion: string;
}

/**
 * Every committed step of every run, with the snapshot it led to (the visualizer's
 * scrubber). Each snapshot is stored here only: the run's latest, which resume needs, is its last
 * step with a snapshot.
 */
export class StepHistory {
  private readonly insert: Database.Statement<{
    runId: string;
    step: number;
    lastSeq: number;
    at: string;
    events: string | null;
    journal: string | null;
    transcripts: string | null;
    snapshot: string | Buffer | null;
    base: number | null;
    definitionHash: string | null;
    stagechartVersion: string | null;
  }>;
  private readonly list: Database.Statement<[string], StepRecord>;
  private readonly snapshotAt: Database.Statement<[string, number], KeyedSnapshot>;

  /** @internal */
  constructor(db: Database.Database) {
    // The marks only tell a step a fork can start from (0) from one stored before a store kept
    // what a fork copies (null); its entries are its own (migration 11).
    this.insert = db.prepare(
      `INSERT INTO steps (run_id, step, last_seq, at, events, journal, transcripts, snapshot,
         snapshot_base, journal_mark, transcript_mark, definition_hash, stagechart_version)
       VALUES (@runId, @step, @lastSeq, @at, @events, @journal, @transcripts, @snapshot, @base,
               0, 0,
               CASE WHEN @snapshot IS NOT NULL THEN COALESCE(@definitionHash,
                 (SELECT definition_hash FROM runs WHERE run_id = @runId)) END,
               @stagechartVersion)`,
    );
    this.list = db.prepare<[string], StepRecord>(
      "SELECT step, last_seq AS lastSeq, at FROM steps WHERE run_id = ? ORDER BY step",
    );
    this.snapshotAt = db.prepare<[string, number], KeyedSnapshot>(
      `SELECT s.snapshot, s.snapshot_base AS base, k.snapshot AS keyframe
       FROM steps s LEFT JOIN steps k ON k.run_id = s.run_id AND k.step = s.snapshot_base
       WHERE s.run_id = ? AND s.step <= ? AND s.snapshot IS NOT NULL
       ORDER BY s.step DESC LIMIT 1`,
    );
  }

  /** Called inside the store's step transaction, so a step and its history row go together. */
  record(
    runId: string,
    step: number,
    lastSeq: number,
    at: string,
    events: string | null,
    entries: StepEntryColumns,
    snapshot: SnapshotWrite | undefined,
  ): void {
    this.insert.run({
      runId,
      step,
      lastSeq,
      at,
      events,
      ...entries,
      snapshot: snapshot?.snapshot ?? null,
      base: snapshot?.base ?? null,
      definitionHash: snapshot?.definitionHash ?? null,
      stagechartVersion: snapshot?.stagechartVersion ?? null,
    });
  }

  stepsOf(runId: string): StepRecord[] {
    return this.list.all(runId);
  }

  /** The snapshot the run had after step k: that step's, or the last one committed before it. */
  snapshotAtStep(runId: string, step: number): unknown {
    const row = this.snapshotAt.get(runId, step);
    return row === undefined ? undefined : JSON.parse(snapshotJson(row, row.keyframe));
  }
}

/** A stored snapshot with the text of the keyframe it is a delta against, if it is one. */
export interface KeyedSnapshot extends StoredSnapshotText {
  keyframe: string | Buffer | null;
}
