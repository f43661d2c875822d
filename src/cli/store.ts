import type { Result } from "../errors.js";
import { DEFAULT_STORE_PATH, SqliteStore } from "../store/index.js";

/** The run store of a command: `--store <path>`, or `.stagechart/runs.db` in the working directory. */
export function openStoreForCli(path: string | undefined): Result<SqliteStore> {
  return SqliteStore.open(path ?? DEFAULT_STORE_PATH);
}
