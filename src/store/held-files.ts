import { closeSync, fstatSync, openSync, statSync } from "node:fs";

/** A store's file held open, to see it unlinked without looking its path up. */
export interface HeldFile {
  /** Whether no name links the file any more (it was deleted, or another file renamed over it). */
  unlinked(): boolean;
  /** The store is done with it (its SQLite connection closed). */
  release(): void;
}

/**
 * One descriptor per file for the process, however many stores have the file open, closed only
 * once none has: closing any descriptor of a file drops every POSIX lock the process holds on
 * it, its SQLite connections' among them (a reader's shared lock, which keeps another process
 * from checkpointing and removing the WAL under it). So a second descriptor is never opened and
 * closed while a store of the process uses the file.
 */
const held = new Map<string, { fd: number; stores: number }>();

/** Holds the file at `path` for a store, which must `release` it once its connection closed. */
export function holdFile(path: string): HeldFile {
  const named = statSync(path);
  let key = `${named.dev}:${named.ino}`;
  let entry = held.get(key);
  if (!entry) {
    const fd = openSync(path, "r");
    // Another file may have taken the path meanwhile: the descriptor is held for what it opened
    // (and, should that file be held already, never closed).
    const opened = fstatSync(fd);
    key = `${opened.dev}:${opened.ino}`;
    entry = held.get(key) ?? { fd, stores: 0 };
    held.set(key, entry);
  }
  const file = entry;
  file.stores += 1;
  let released = false;
  return {
    unlinked: () => fstatSync(file.fd).nlink === 0,
    release: () => {
      if (released) return;
      released = true;
      file.stores -= 1;
      if (file.stores > 0) return;
      held.delete(key);
      closeSync(file.fd);
    },
  };
}
