import { AsyncLocalStorage } from "node:async_hooks";
import pg from "pg";
import type { PostgresStore } from "../../src/store/postgres/postgres-store.js";

/**
 * Counts the statements this process sends to PostgreSQL, as the driver sends them: each call of
 * a client's `query` is one statement, and one round trip (node-postgres sends a query only once
 * the one before it is answered, and a query with parameters is one Parse/Bind/Execute/Sync
 * exchange). A pooled query is a client's query too, so every connection of every pool is seen.
 */
export interface StatementCount {
  /** Statements sent since counting started. */
  readonly total: number;
  /** Statements sent by the store's `commitStep` calls (in their asynchronous context). */
  readonly inCommits: number;
  /** `commitStep` calls the store answered. */
  readonly commits: number;
  /** The statements of each answered `commitStep` call, in the order they were answered. */
  readonly perCommit: readonly number[];
  /** Puts the driver back as it was. */
  restore(): void;
}

/**
 * Starts counting; `store`'s commits are counted apart from the rest (its control polls, lease
 * renewals and reads). Call `restore` when done.
 */
export function countStatements(store?: PostgresStore): StatementCount {
  const commit = new AsyncLocalStorage<{ statements: number }>();
  const counts = { total: 0, inCommits: 0, perCommit: [] as number[] };
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = prototype.query;
  prototype.query = function counted(this: unknown, ...args: unknown[]) {
    counts.total += 1;
    const inCommit = commit.getStore();
    if (inCommit) {
      inCommit.statements += 1;
      counts.inCommits += 1;
    }
    return query.apply(this, args);
  };
  const commitStep = store?.commitStep;
  if (store && commitStep) {
    store.commitStep = async (runId, step) => {
      const tally = { statements: 0 };
      const recorded = await commit.run(tally, () => commitStep.call(store, runId, step));
      counts.perCommit.push(tally.statements);
      return recorded;
    };
  }
  return {
    get total() {
      return counts.total;
    },
    get inCommits() {
      return counts.inCommits;
    },
    get commits() {
      return counts.perCommit.length;
    },
    get perCommit() {
      return counts.perCommit;
    },
    restore() {
      prototype.query = query;
      if (store && commitStep) Reflect.deleteProperty(store, "commitStep");
    },
  };
}
