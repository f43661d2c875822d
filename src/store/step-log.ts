import Database from "better-sqlite3";
import { err, type Result } from "../errors.js";
import type { AuditEvent } from "../events/audit.js";
import type { StepCommit } from "../runtime/persistence.js";
import type { StoredSnapshot } from "../runtime/run-records.js";
import { VERSION } from "../version.js";
import { decodeSnapshot, eventsAfter, toStepEvents } from "./records.js";
import { SnapshotChains, snapshotOfChain } from "./snapshot-chain.js";
import type { Statements } from "./statements.js";
import { type StoredEntries, toStepEntries } from "./step-entries.js";
import type { StepHistory } from "./step-history.js";
import { auditRunMismatch, noSnapshot, runNotFound, stepTaken } from "./store-errors.js";

/**
 * What a run's steps write to the SQLite store — one row each, with its audit events, journal and
 * transcript entries and snapshot — and how its events and snapshot are read back. Every call runs inside the
 * caller's transaction (or is a single statement).
 */
export class StepLog {
  private readonly chains = new SnapshotChains();
  /**
   * Each run's last step as this store appended it: read from the file at the run's first append
   * here, then kept (two lookups a commit). Only the run's lease holder appends steps
   * for it, so it is let go when this store takes the lease (`acquireLease`, `claimRun`: what
   * correctness rests on) and when a transaction rolls back; leaving `running`, giving the lease
   * up or requeuing only frees it. An owner that lost its lease unawares numbers a step another
   * owner took: `Session/LeaseLost`, the steps' key refusing it.
   */
  private readonly tails = new Map<string, { step: number; lastSeq: number }>();

  constructor(
    private readonly sql: Statements,
    private readonly history: StepHistory,
  ) {}

  /** Appends the step's row: its events numbered after the run's last, its entries, its snapshot. */
  append(runId: string, step: StepCommit, at: string, carried?: StoredEntries): AuditEvent[] {
    const last = this.tails.get(runId) ?? this.storedTail(runId);
    let seq = last.lastSeq;
    const recorded = step.events.map((input): AuditEvent => {
      if (input.runId !== runId) throw auditRunMismatch(runId, input.runId);
      seq += 1;
      // Numbered here, whatever seq the emitter gave it (most give the store's next, as the step
      // recorder does: such an event is kept as it is); the moment it says it happened kept.
      if (input.seq === seq && input.at !== undefined) return input as AuditEvent;
      return { ...input, seq, at: input.at ?? at };
    });
    const entries = toStepEntries(runId, step, carried);
    const number = last.step + 1;
    const encoded =
      step.snapshot === undefined ? undefined : this.chains.encode(runId, number, step.snapshot);
    const snapshot = encoded && {
      snapshot: encoded.snapshot,
      base: encoded.base,
      definitionHash: step.definitionHash ?? null,
      stagechartVersion: VERSION,
    };
    try {
      this.history.record(runId, number, seq, at, toStepEvents(recorded), entries, snapshot);
    } catch (error) {
      throw isStepTaken(error) ? stepTaken(runId, number) : error;
    }
    this.tails.set(runId, { step: number, lastSeq: seq });
    return recorded;
  }

  /** The run's last step as this store appended it, if it did since it last let the run go. */
  tailOf(runId: string): { step: number; lastSeq: number } | undefined {
    return this.tails.get(runId);
  }

  private storedTail(runId: string): { step: number; lastSeq: number } {
    if (this.sql.runExists.get(runId) === undefined) throw runNotFound(runId);
    return this.sql.lastStep.get(runId) ?? { step: 0, lastSeq: 0 };
  }

  /**
   * The run no longer commits steps here, or may have committed some elsewhere (it ended or
   * parked, its lease changed hands): its snapshot chain and its last step are let go.
   */
  release(runId: string): void {
    this.chains.forget(runId);
    this.tails.delete(runId);
  }

  /** A transaction failed: a chain's end or last step it wrote may not be stored, so none is trusted. */
  rolledBack(): void {
    this.chains.forget();
    this.tails.clear();
  }

  /** The run's latest snapshot: `Session/SnapshotCorrupt` when it does not read back. */
  latestSnapshot(runId: string): Result<StoredSnapshot> {
    const rows = this.history.chainOf(runId);
    const last = rows.at(-1);
    if (!last) return err(noSnapshot(runId));
    const { definitionHash, stagechartVersion, updatedAt } = last;
    const stamp = { definitionHash, stagechartVersion, updatedAt };
    return decodeSnapshot(runId, stamp, () => snapshotOfChain(rows));
  }

  lastSeq(runId: string): number {
    return this.sql.lastStep.get(runId)?.lastSeq ?? 0;
  }

  auditOf(runId: string, afterSeq: number): AuditEvent[] {
    const steps = this.sql.audit.all(runId, afterSeq);
    return eventsAfter(runId, steps, afterSeq);
  }
}

const isStepTaken = (error: unknown): boolean =>
  error instanceof Database.SqliteError && error.code === "SQLITE_CONSTRAINT_PRIMARYKEY";
