import type { TranscriptEntry } from "../compiler/stage-types.js";
import { err, type Result } from "../errors.js";
import type { AuditEvent } from "../inspect/audit.js";
import type { StepCommit } from "../runtime/persistence.js";
import type { TranscriptRow } from "../runtime/transcripts.js";
import { VERSION } from "../version.js";
import type { StepHistory } from "./history.js";
import type { JournalRow, RunTranscriptRow } from "./postgres/async-run-store.js";
import { decodeSnapshot, eventsAfter, type StoredSnapshot, toStepEvents } from "./records.js";
import { runIdOfJournalKey } from "./run-ids.js";
import { SnapshotKeyframes, snapshotJson } from "./snapshot-delta.js";
import type { Statements } from "./statements.js";
import { auditRunMismatch, noSnapshot, runNotFound } from "./store-errors.js";
import { entryOf, entryWrite } from "./tool-results.js";

/**
 * What a run's steps write to the SQLite store — audit events, journal and transcript entries,
 * the step row with its snapshot — and how each is read back. Every call runs inside the
 * caller's transaction (or is a single statement).
 */
export class StepLog {
  private readonly keyframes = new SnapshotKeyframes();

  constructor(
    private readonly sql: Statements,
    private readonly history: StepHistory,
  ) {}

  /**
   * Appends the step: `writeEntries` writes its journal and transcript entries (before its row,
   * whose marks count them), then its row with its events numbered after the run's last.
   */
  append(runId: string, step: StepCommit, at: string, writeEntries: () => void): AuditEvent[] {
    if (this.sql.runExists.get(runId) === undefined) throw runNotFound(runId);
    const last = this.sql.lastStep.get(runId);
    let seq = last?.lastSeq ?? 0;
    const recorded = step.events.map((input): AuditEvent => {
      if (input.runId !== runId) throw auditRunMismatch(runId, input.runId);
      seq += 1;
      return { seq, at, ...input };
    });
    writeEntries();
    const number = (last?.step ?? 0) + 1;
    const snapshot =
      step.snapshot === undefined
        ? undefined
        : {
            ...this.keyframes.encode(runId, number, JSON.stringify(step.snapshot)),
            definitionHash: step.definitionHash ?? null,
            stagechartVersion: VERSION,
          };
    this.history.record(runId, number, seq, at, toStepEvents(recorded), snapshot);
    return recorded;
  }

  /** The run no longer commits steps here (it ended or parked): its keyframe is let go. */
  release(runId: string): void {
    this.keyframes.forget(runId);
  }

  /** A transaction failed: a keyframe it wrote may not be stored, so none is trusted. */
  rolledBack(): void {
    this.keyframes.forget();
  }

  /** The run's latest snapshot: `Session/SnapshotCorrupt` when it does not read back. */
  latestSnapshot(runId: string): Result<StoredSnapshot> {
    const row = this.sql.snapshot.get(runId);
    if (!row) return err(noSnapshot(runId));
    const { snapshot, base, keyframe, ...stamp } = row;
    return decodeSnapshot(runId, stamp, () => snapshotJson({ snapshot, base }, keyframe));
  }

  lastSeq(runId: string): number {
    return this.sql.lastStep.get(runId)?.lastSeq ?? 0;
  }

  auditOf(runId: string, afterSeq: number): AuditEvent[] {
    const steps = this.sql.audit.all(runId, afterSeq);
    return eventsAfter(runId, steps, afterSeq);
  }

  journalValue(key: string): string | undefined {
    return this.sql.journalValue.get(key);
  }

  /** A journal entry is a fact: recording a key again keeps the first value. */
  record(key: string, value: unknown, at: string): void {
    const row = { key, runId: runIdOfJournalKey(key), value: JSON.stringify(value), at };
    this.sql.recordJournal.run(row);
  }

  put(stageExecutionId: string, key: string, entry: TranscriptEntry, resultOf?: string): void {
    this.sql.putTranscript.run(entryWrite(stageExecutionId, key, entry, resultOf));
  }

  transcriptRows(stageExecutionId: string, before?: string): TranscriptRow[] {
    return this.sql.transcript
      .all({ stageExecutionId, before: before ?? null })
      .map((row) => ({ key: row.key, entry: entryOf(stageExecutionId, row) }));
  }

  journalOf(runId: string): JournalRow[] {
    return this.sql.journalOf.all(runId);
  }

  transcriptsOf(runId: string): RunTranscriptRow[] {
    return this.sql.transcriptsOf.all(runId).map((row) => ({
      stageExecutionId: row.stageExecutionId,
      key: row.key,
      entry: entryOf(row.stageExecutionId, row),
    }));
  }
}
