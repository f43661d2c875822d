import type { Result } from "../errors.js";
import type { RunStore } from "../runtime/store-port.js";
import { openStore } from "../store/open-store.js";
import type { PostgresStoreOptions } from "../store/postgres/postgres-store.js";
import { noStoreFileFor, storeFor } from "./store.js";

/**
 * The store of a command (`--store`, else `$STAGECHART_STORE`): a `postgres://` URL or a SQLite
 * file, `.stagechart/runs.db` by default, created when absent.
 */
export async function openAnyStore(
  flag: string | undefined,
  postgres?: PostgresStoreOptions,
): Promise<Result<RunStore>> {
  return openStore(storeFor(flag), { postgres });
}

/** `openAnyStore` for a command on runs already stored: no SQLite file is created, `undefined` then. */
export async function openExistingAnyStore(
  flag: string | undefined,
): Promise<Result<RunStore> | undefined> {
  return noStoreFileFor(flag) ? undefined : openAnyStore(flag);
}
