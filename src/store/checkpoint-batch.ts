import type Database from "better-sqlite3";
import { checkpoint } from "./sqlite-file.js";

/** Runs that left `running` before one checkpoint settles them all, and how long the first waits. */
const BATCH = 32;
const DELAY_MS = 1000;

/**
 * Runs that left `running` whose marks wait for a checkpoint to put all of them in the main file.
 * Checkpoints are taken for many runs at once (a checkpoint syncs the disk, which cost a run
 * ending alone about a tenth of its durable time): when `BATCH` runs wait, a moment after the
 * first one, and when the store is closed. Until then the WAL holds them, as it holds every
 * commit, and their marks say so.
 */
export class CheckpointBatch {
  private readonly waiting = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  /** `settled` removes the runs' marks once a checkpoint has put the runs in the main file. */
  constructor(
    private readonly db: Database.Database,
    private readonly settled: (runIds: string[]) => void,
  ) {}

  /** The run left `running`. */
  add(runId: string): void {
    this.waiting.add(runId);
    if (this.waiting.size >= BATCH) this.flush();
    else
      this.timer ??= setTimeout(() => {
        try {
          this.flush();
        } catch {
          // A mark that cannot be removed is left: it says no more than the store holds.
        }
      }, DELAY_MS).unref();
  }

  /** The run is written again (a resume): its mark is the live run's once more. */
  delete(runId: string): void {
    this.waiting.delete(runId);
  }

  /** Checkpoints now and settles the waiting runs, when all of the WAL reached the main file. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.waiting.size === 0 || !this.db.open || !checkpoint(this.db)) return;
    const settled = [...this.waiting];
    this.waiting.clear();
    this.settled(settled);
  }
}
