import { existsSync } from "node:fs";
import type { RunStore } from "../runtime/store-port.js";
import { SqliteStore } from "../store/sqlite-store.js";

/** Where the inspect server reads runs: either store, behind the asynchronous contract. */
export interface StoreSource {
  /** The store, or undefined while there is none yet. */
  current(): Promise<RunStore | undefined>;
  /** Closes what the source opened; a store it was given is its giver's to close. */
  close(): Promise<void>;
}

/** A store already open (a PostgreSQL store): read as it is, left open. */
export const givenStore = (store: RunStore): StoreSource => ({
  current: async () => store,
  close: async () => {},
});

/** A SQLite file that may not exist yet: opened once it does, closed with the source. */
export function sqliteFileSource(path: string): StoreSource {
  let store: RunStore | undefined;
  return {
    current: async () => {
      if (store || !existsSync(path)) return store;
      const opened = SqliteStore.open(path);
      if (opened.ok) store = opened.value;
      return store;
    },
    close: async () => {
      await store?.close();
    },
  };
}
