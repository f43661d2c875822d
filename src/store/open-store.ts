import type { Result } from "../errors.js";
import type { RunStore } from "../runtime/store-port.js";
import { PostgresStore, type PostgresStoreOptions } from "./postgres/postgres-store.js";
import { SqliteStore, type StoreOptions } from "./sqlite-store.js";

/** A store spec naming a PostgreSQL database (`postgres://` or `postgresql://`) rather than a file. */
export const isPostgresUrl = (spec: string | undefined): spec is string =>
  spec !== undefined && /^postgres(ql)?:\/\//i.test(spec);

export interface OpenStoreOptions {
  /** For a SQLite file. */
  sqlite?: StoreOptions;
  /** For a PostgreSQL database. */
  postgres?: PostgresStoreOptions;
}

/**
 * The one place a store spec picks a backend: a `postgres://` URL opens the shared PostgreSQL
 * store (`Session/StoreUnavailable` naming it without its password when it cannot be reached),
 * `:memory:` a SQLite store held in memory (durable within the process, gone once closed: for
 * tests and short-lived apps), anything else the path of a SQLite file, created when absent.
 * Each implements the store
 * port, which the run API (`startRun`, `resumeRun`, `forkRun`, `reopenRun`), the worker and the
 * inspect server take.
 */
export async function openStore(
  spec: string,
  options: OpenStoreOptions = {},
): Promise<Result<RunStore>> {
  return isPostgresUrl(spec)
    ? PostgresStore.open(spec, options.postgres)
    : SqliteStore.open(spec, options.sqlite);
}
