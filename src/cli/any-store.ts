import type { Result } from "../errors.js";
import type { RunStore } from "../runtime/store-port.js";
import { PostgresStore, type PostgresStoreOptions } from "../store/postgres/postgres-store.js";
import { SqliteStore } from "../store/sqlite-store.js";
import { isPostgresUrl, noStoreFileFor, storePathFor, storeSpecOf } from "./store.js";

/**
 * The store of a command that works on either kind (`runs`, `show`, `audit`, `cancel`,
 * `run --detach`): a `postgres://` URL (`--store`, else `$STAGECHART_STORE`) opens the shared
 * store, anything else the SQLite file, both behind the same asynchronous contract. A database
 * that cannot be reached is `Session/StoreUnavailable`, naming it without its password.
 */
export async function openAnyStore(
  flag: string | undefined,
  postgres?: PostgresStoreOptions,
): Promise<Result<RunStore>> {
  const spec = storeSpecOf(flag);
  return isPostgresUrl(spec)
    ? PostgresStore.open(spec, postgres)
    : SqliteStore.open(storePathFor(flag));
}

/** `openAnyStore` for a command that only reads: no SQLite file is created, `undefined` then. */
export async function openExistingAnyStore(
  flag: string | undefined,
): Promise<Result<RunStore> | undefined> {
  return noStoreFileFor(flag) ? undefined : openAnyStore(flag);
}
