import { ok, type Result } from "../errors.js";
import type { InspectedStore } from "../inspect/server.js";
import { isPostgresUrl } from "../store/open-store.js";
import { PostgresStore } from "../store/postgres/postgres-store.js";
import { storePathFor, storeSpecOf } from "./store.js";

/** The store an inspect server reads, and how to let go of it once the server closed. */
export interface ServedStore {
  store: InspectedStore;
  close(): Promise<void>;
}

/**
 * The store `inspect` and `run --inspect` serve (`--store`, else `$STAGECHART_STORE`): the SQLite
 * file, which the server opens once it exists, or the PostgreSQL database, opened here
 * (`Session/StoreUnavailable` naming it without its password when it cannot be reached).
 */
export async function servedStoreOf(flag: string | undefined): Promise<Result<ServedStore>> {
  const spec = storeSpecOf(flag);
  if (!isPostgresUrl(spec))
    return ok({ store: { storePath: storePathFor(flag) }, close: async () => {} });
  const opened = await PostgresStore.open(spec);
  if (!opened.ok) return opened;
  return ok({ store: { store: opened.value }, close: () => opened.value.close() });
}
