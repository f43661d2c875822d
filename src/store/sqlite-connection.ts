import { resolve } from "node:path";
import type Database from "better-sqlite3";
import { isoStamps } from "../events/audit.js";
import { type FileIdentity, identityOf } from "./sqlite-file.js";
import { storeFailure, storeReplaced, storeUnavailable } from "./store-errors.js";

/**
 * The SQLite store's open file and its clock, and the ways the store runs a call on it: guarded
 * (a failing SQLite call told as what it means for the user), and for a write, in a transaction
 * or `written`, each checked to have reached the file the path still names.
 */
export abstract class SqliteConnection {
  private readonly transaction: Database.Transaction<(work: () => unknown) => unknown>;
  /** Where the file was opened, and which file that was: see `stillStored`. */
  private readonly absolutePath: string;
  private readonly identity: FileIdentity | undefined;
  /** @internal better-sqlite3's database, left out of the package's declarations (see `migrate`). */
  protected readonly db: Database.Database;

  /** @internal */
  protected constructor(
    db: Database.Database,
    protected readonly path: string,
    protected readonly now: () => number,
  ) {
    this.db = db;
    this.transaction = db.transaction((work) => work());
    this.timestamp = isoStamps(now);
    this.absolutePath = resolve(path);
    this.identity = identityOf(this.absolutePath);
  }

  close(): void {
    this.db.close();
  }

  /** A transaction failed: nothing kept in memory about what it wrote is to be trusted. */
  protected abstract rolledBack(): void;

  /** A transaction committed, to the file the path names. */
  protected abstract committed(): void;

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
    let result: T;
    try {
      result = this.guarded(() => this.transaction.immediate(work) as T);
      this.stillStored();
    } catch (error) {
      // Rolled back, or committed to a file that is gone: nothing of it is stored either way.
      this.rolledBack();
      throw error;
    }
    this.committed();
    return result;
  }

  /** A write outside a transaction: `guarded`, then checked as a transaction is (`stillStored`). */
  protected written<T>(work: () => T): T {
    const result = this.guarded(work);
    this.stillStored();
    return result;
  }

  /**
   * Throws `Session/StoreUnavailable` once the path no longer names the file this connection
   * writes to (it was deleted, or another file put in its place): SQLite goes on writing to the
   * open file without a word, and a run would end "done" with nothing anyone can read back. One
   * stat of the path, after each write; what was written is then gone with the file.
   */
  private stillStored(): void {
    const { identity } = this;
    if (!identity) return;
    let now: FileIdentity | undefined;
    try {
      now = identityOf(this.absolutePath);
    } catch (cause) {
      throw storeUnavailable(this.path, cause);
    }
    if (now?.dev !== identity.dev || now.ino !== identity.ino)
      throw storeReplaced(this.path, now === undefined);
  }

  /** The clock's time as ISO 8601 (formatted once per millisecond: steps come faster). */
  protected readonly timestamp: () => string;
}
