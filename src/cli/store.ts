import { statSync } from "node:fs";
import { resolve } from "node:path";
import { type Result, StagechartError } from "../errors.js";
import { DEFAULT_STORE_PATH, SqliteStore } from "../store/index.js";
import { isPostgresUrl } from "../store/open-store.js";

/** What `--store` says in a command's help. */
export const STORE_HELP =
  "the run store: a SQLite file (default .stagechart/runs.db) or a postgres:// URL; default $STAGECHART_STORE";

/** A command's store as given: `--store`, else `$STAGECHART_STORE`. */
export const storeSpecOf = (flag: string | undefined): string | undefined =>
  flag ?? (process.env.STAGECHART_STORE || undefined);

/** What `openStore` opens for a command: its PostgreSQL URL, or its SQLite file's path. */
export const storeFor = (flag: string | undefined): string => {
  const spec = storeSpecOf(flag);
  return isPostgresUrl(spec) ? spec : storePathFor(flag);
};

/** The store path of a command: `--store <path>`, or `.stagechart/runs.db` in the working directory. */
export const storePathFor = (path: string | undefined): string =>
  resolve(storeSpecOf(path) ?? DEFAULT_STORE_PATH);

/** The run store of a command that stores runs, created when there is none yet. */
export const openStoreForCli = (path: string | undefined): Result<SqliteStore> =>
  SqliteStore.open(storePathFor(path));

/** `--store` names a SQLite file not there: a command that only reads creates none. */
export const noStoreFileFor = (flag: string | undefined): boolean =>
  !isPostgresUrl(storeSpecOf(flag)) && isAbsent(storePathFor(flag));

/** No file at `file`; one that cannot even be looked at (EACCES) is not taken for absent. */
export function isAbsent(file: string): boolean {
  try {
    statSync(file);
    return false;
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    return code === "ENOENT" || code === "ENOTDIR";
  }
}

/** `Session/RunNotFound` for a run looked up where there is no store at all. */
export const noStoreFor = (runId: string, path: string | undefined): StagechartError =>
  new StagechartError(
    "Session/RunNotFound",
    `no run ${runId}: there is no store at ${storePathFor(path)}`,
    { runId },
  );
