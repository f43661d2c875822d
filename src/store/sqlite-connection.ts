import type Database from "better-sqlite3";
import { storeFailure } from "./store-errors.js";

/**
 * The SQLite store's open file and its clock, and the two ways the store runs a call on it:
 * guarded (a failing SQLite call told as what it means for the user) or in a transaction.
 */
export abstract class SqliteConnection {
  private readonly transaction: Database.Transaction<(work: () => unknown) => unknown>;

  protected constructor(
    protected readonly db: Database.Database,
    protected readonly path: string,
    protected readonly now: () => number,
  ) {
    this.transaction = db.transaction((work) => work());
  }

  close(): void {
    this.db.close();
  }

  /** A transaction failed: nothing kept in memory about what it wrote is to be trusted. */
  protected abstract rolledBack(): void;

  /** Runs `work`, with a failing SQLite call told as what it means for the user. */
  protected guarded<T>(work: () => T): T {
    try {
      return work();
    } catch (error) {
      throw storeFailure(this.path, error);
    }
  }

  /**
   * Runs `work` in an IMMEDIATE transaction: the write lock is taken up front (waiting up to
   * busy_timeout), so a transaction that reads before it writes cannot fail on a snapshot that
   * another process's commit made stale.
   */
  protected immediately<T>(work: () => T): T {
    try {
      return this.guarded(() => this.transaction.immediate(work) as T);
    } catch (error) {
      this.rolledBack();
      throw error;
    }
  }

  protected timestamp(): string {
    return new Date(this.now()).toISOString();
  }
}
