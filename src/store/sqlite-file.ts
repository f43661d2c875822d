import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

/**
 * Creates `dir` and its missing parents one at a time. Node's own recursive mkdir never returns
 * under a parent that refuses new entries with ENOENT, such as /proc/self.
 */
function makeDirectories(dir: string): void {
  const missing: string[] = [];
  for (let at = dir; !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  for (const each of missing) mkdirSync(each);
}

/**
 * Copies the WAL into the main file; whether all of it is there now. Best effort: a checkpoint
 * that cannot finish (a reader in the way, a full disk) loses nothing, the WAL still holds every
 * commit. PASSIVE: the WAL file is kept and written over from its start, not cut to nothing and
 * grown again.
 */
export function checkpoint(db: Database.Database): boolean {
  try {
    const [result] = db.pragma("wal_checkpoint(PASSIVE)") as {
      busy: number;
      log: number;
      checkpointed: number;
    }[];
    return result !== undefined && result.busy === 0 && result.checkpointed === result.log;
  } catch {
    // Left to SQLite's next automatic checkpoint.
    return false;
  }
}

/** Which file a path names: its device and inode. */
export interface FileIdentity {
  dev: number;
  ino: number;
}

/** The identity of the file at `path`, or undefined when there is none. */
export function identityOf(path: string): FileIdentity | undefined {
  const stats = statSync(path, { throwIfNoEntry: false });
  return stats && { dev: stats.dev, ino: stats.ino };
}

/** How long a statement waits for another process's lock before the store reports it locked. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Puts the file in WAL mode. While another process is still creating the file (its first write
 * transaction, before WAL), SQLite refuses the switch at once rather than wait, as waiting there
 * could deadlock: it is tried again until that process is done, for as long as a lock is waited for.
 */
function switchToWal(db: Database.Database): void {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      db.pragma("journal_mode = WAL");
      return;
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error;
      Atomics.wait(PAUSE, 0, 0, 10);
    }
  }
}

/** Something to wait on synchronously: nothing ever wakes it, so a wait lasts its timeout. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

const isBusy = (error: unknown): boolean =>
  error instanceof Database.SqliteError && error.code.startsWith("SQLITE_BUSY");

/** The store's SQLite file, opened (created with its directories when missing) in WAL mode. */
export function openDatabase(path: string): Database.Database {
  makeDirectories(dirname(path));
  const db = new Database(path, { timeout: BUSY_TIMEOUT_MS });
  try {
    // Every commit rewrites each page it touches whole: small pages keep that close to the
    // bytes a step adds. Only a new, empty file takes it; an older one keeps its own.
    db.pragma("page_size = 1024");
    switchToWal(db);
    // In WAL mode NORMAL cannot corrupt the file and loses nothing when the process dies; a
    // power cut may drop the last commits, which resume treats like an earlier crash.
    db.pragma("synchronous = NORMAL");
    // Fewer automatic checkpoints: a page many commits rewrite reaches the file fewer times.
    db.pragma("wal_autocheckpoint = 4000");
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
