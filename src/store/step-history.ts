import type Database from "better-sqlite3";
import type { StepRecord } from "../runtime/run-records.js";
import { type ChainRow, type StoredSnapshotText, snapshotOfChain } from "./snapshot-chain.js";
import type { StepEntryColumns } from "./step-entries.js";
import { inRun, STEP_KEY, upToStep, WITH_RUN, withRun } from "./step-keys.js";

/** A snapshot as a step stores it (its JSON or a patch, see snapshot-chain.ts) and what made it. */
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
  /** Bound by position, not by name: binding a dozen values by name costs a commit a tenth. */
  private readonly insert: Database.Statement<
    [
      runIdForKey: string,
      stepForKey: number,
      runId: string,
      step: number,
      lastSeq: number,
      at: string,
      events: string | null,
      journal: string | null,
      transcripts: string | null,
      snapshot: string | Buffer | null,
      base: number | null,
      stamped: 0 | 1,
      definitionHash: string | null,
      runIdAgain: string,
      stagechartVersion: string | null,
    ]
  >;
  private readonly list: Database.Statement<[string], StepRecord>;
  private readonly chainAt: Database.Statement<{ runId: string; step: number }, StampedChainRow>;

  /** @internal */
  constructor(db: Database.Database) {
    // The marks only tell a step a fork can start from (0) from one stored before a store kept
    // what a fork copies (null); its entries are its own (migration 11).
    this.insert = db.prepare(
      `INSERT INTO steps (id, run_id, step, last_seq, at, events, journal, transcripts, snapshot,
         snapshot_base, journal_mark, transcript_mark, definition_hash, stagechart_version)
       VALUES (${STEP_KEY}, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0,
               CASE WHEN ? THEN COALESCE(?, (SELECT definition_hash FROM runs WHERE run_id = ?)) END,
               ?)`,
    );
    this.list = db.prepare<[string], StepRecord>(
      `${WITH_RUN} SELECT step, last_seq AS lastSeq, at FROM steps WHERE ${inRun()} ORDER BY id`,
    );
    // Step @step at most, and never past the run's range: `chainOf` asks for its latest so.
    this.chainAt = db.prepare<{ runId: string; step: number }, StampedChainRow>(
      `${withRun("@runId")},
       last AS (SELECT step, snapshot_base FROM steps
         WHERE ${inRun()} AND ${upToStep("min(@step, 4294967295)")} AND snapshot IS NOT NULL
         ORDER BY id DESC LIMIT 1)
       SELECT s.step, s.snapshot, s.snapshot_base AS base, s.definition_hash AS definitionHash,
         s.stagechart_version AS stagechartVersion, s.at AS updatedAt
       FROM last, steps s
       WHERE s.id BETWEEN (SELECT low FROM run) + coalesce(last.snapshot_base, last.step)
           AND (SELECT low FROM run) + last.step
         AND s.snapshot IS NOT NULL
       ORDER BY s.id`,
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
    this.insert.run(
      runId,
      step,
      runId,
      step,
      lastSeq,
      at,
      events,
      entries.journal,
      entries.transcripts,
      snapshot?.snapshot ?? null,
      snapshot?.base ?? null,
      snapshot ? 1 : 0,
      snapshot?.definitionHash ?? null,
      runId,
      snapshot?.stagechartVersion ?? null,
    );
  }

  stepsOf(runId: string): StepRecord[] {
    return this.list.all(runId);
  }

  /** The snapshot the run had after step k: that step's, or the last one committed before it. */
  snapshotAtStep(runId: string, step: number): unknown {
    const rows = this.chainAt.all({ runId, step });
    return rows.length === 0 ? undefined : snapshotOfChain(rows);
  }

  /**
   * The rows of the run's snapshot after step k (its latest by default): its keyframe's and the
   * patches after it, the last one stamped with what made it. Empty when it has none.
   */
  chainOf(runId: string, step = Number.MAX_SAFE_INTEGER): StampedChainRow[] {
    return this.chainAt.all({ runId, step });
  }
}

/** A row of a snapshot's chain with the stamp of the step that stored it. */
export interface StampedChainRow extends ChainRow {
  definitionHash: string;
  stagechartVersion: string;
  updatedAt: string;
}
