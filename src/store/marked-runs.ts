import type Database from "better-sqlite3";
import type { StagechartError } from "../errors.js";
import { CheckpointBatch } from "./checkpoint-batch.js";
import { LiveMarks, type StepTail } from "./live-marks.js";
import type { RunRow } from "./records.js";
import { storeUnavailable } from "./store-errors.js";

/**
 * The SQLite store's runs as their live marks tell them (see `LiveMarks`): a run's mark is made
 * with its row when the run is created, moved on once a transaction that appended its steps
 * commits, and removed when the run has left `running` and a checkpoint has put its rows in the
 * main file (`CheckpointBatch`). Until then a WAL lost after a crash cannot take the run unseen.
 * A mark that cannot be written is `Session/StoreUnavailable`, naming where it goes.
 */
export class MarkedRuns {
  private readonly marks: LiveMarks;
  /** The runs the transaction under way appended steps to, and how far: marked once it commits. */
  private readonly appended = new Map<string, StepTail>();
  /** Runs that left `running` whose marks wait for a checkpoint. */
  private readonly unsettled: CheckpointBatch;

  constructor(
    db: Database.Database,
    private readonly storePath: string,
  ) {
    this.marks = new LiveMarks(storePath);
    this.unsettled = new CheckpointBatch(db, (runIds) =>
      this.guarded(() => this.marks.settled(runIds)),
    );
  }

  /** The run was created as `row`, with the steps it has (none, or a fork's first). */
  created(row: RunRow, tail?: StepTail): void {
    this.guarded(() => this.marks.created(row.runId, JSON.stringify(row), tail));
  }

  /** The rows of runs a lost WAL took, which their marks hold (see `LiveMarks.lostRows`). */
  lostRows(exists: (runId: string) => boolean): RunRow[] {
    return this.marks.lostRows<RunRow>(exists);
  }

  /** The transaction under way appended the run's steps, up to `tail`. */
  stepsAppended(runId: string, tail: StepTail): void {
    this.appended.set(runId, tail);
  }

  /** The transaction under way committed: each run it appended to is marked as far as it got. */
  committed(): void {
    try {
      for (const [runId, tail] of this.appended) {
        // Written again (a resume): its mark is the live run's once more.
        this.unsettled.delete(runId);
        this.guarded(() => this.marks.committed(runId, tail));
      }
    } finally {
      this.appended.clear();
    }
  }

  /** The transaction under way failed: none of its runs is marked further. */
  rolledBack(): void {
    this.appended.clear();
  }

  /** The run left `running`: its mark goes with the next checkpoint. */
  leftRunning(runId: string): void {
    this.unsettled.add(runId);
  }

  /** The run is not written here for now: its mark's file is closed, the mark stays. */
  forget(runId: string): void {
    this.marks.forget(runId);
  }

  /** The runs were pruned: their marks go now, so opening the store never puts their rows back. */
  gone(runIds: string[]): void {
    for (const runId of runIds) {
      this.marks.forget(runId);
      this.unsettled.delete(runId);
    }
    this.guarded(() => this.marks.settled(runIds));
  }

  /** Runs whose steps the store lost, as their marks tell (`LiveMarks.lostSteps`). */
  lostSteps(
    stored: (runId: string) => StepTail | undefined,
    exists: (runId: string) => boolean,
  ): StagechartError[] {
    return this.marks.lostSteps(this.storePath, stored, exists);
  }

  /** Settles the runs waiting for a checkpoint, and closes every mark's file. */
  close(): void {
    this.unsettled.flush();
    this.marks.close();
  }

  private guarded(work: () => void): void {
    try {
      work();
    } catch (cause) {
      throw storeUnavailable(this.marks.dir, cause);
    }
  }
}
