import { resolve } from "node:path";
import type Database from "better-sqlite3";
import { isoStamps } from "../events/audit.js";
import { type HeldFile, holdFile } from "./held-files.js";
import { type FileIdentity, identityOf } from "./sqlite-file.js";
import { storeFailure, storeReplaced, storeUnavailable } from "./store-errors.js";

/** How long writes go on without the store's path being looked up (see `stillStored`). */
const PATH_LOOKUP_MS = 1000;

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
  /** The file as opened, held to see it unlinked (see `stillStored`). */
  private readonly held: HeldFile | undefined;
  /** When the path was last looked up (`performance.now()`). */
  private pathCheckedAt = 0;
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
    this.held = this.identity && holdFile(this.absolutePath);
    this.pathCheckedAt = performance.now();
  }

  close(): void {
    this.db.close();
    this.held?.release();
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
   * another process's commit made stale. `lookUpPath`: the path is looked up after it, whenever
   * it was last (see `stillStored`).
   */
  protected immediately<T>(work: () => T, lookUpPath = false): T {
    let result: T;
    try {
      result = this.guarded(() => this.transaction.immediate(work) as T);
      this.stillStored(lookUpPath);
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
   * open file without a word, and a run would end "done" with nothing anyone can read back.
   * Checked after each write: the file as opened no longer linked anywhere (deleted, or renamed
   * over) is seen at once, from its descriptor; the path is looked up when a run's status
   * changes (`lookUpPath`) and at least once a second, which also finds a file moved elsewhere
   * or still linked under another name (a lookup after every write would cost a step about a
   * tenth of its commit).
   */
  private stillStored(lookUpPath = false): void {
    const { identity, held } = this;
    if (!identity || !held) return;
    let unlinked: boolean;
    try {
      unlinked = held.unlinked();
    } catch (cause) {
      throw storeUnavailable(this.path, cause);
    }
    const now = performance.now();
    if (!unlinked && !lookUpPath && now - this.pathCheckedAt < PATH_LOOKUP_MS) return;
    this.pathCheckedAt = now;
    let named: FileIdentity | undefined;
    try {
      named = identityOf(this.absolutePath);
    } catch (cause) {
      throw storeUnavailable(this.path, cause);
    }
    if (named?.dev !== identity.dev || named.ino !== identity.ino)
      throw storeReplaced(this.path, named === undefined);
  }

  /** The clock's time as ISO 8601 (formatted once per millisecond: steps come faster). */
  protected readonly timestamp: () => string;
}
