import { statSync } from "node:fs";
import { resolve } from "node:path";
import { type Result, StagechartError } from "../errors.js";
import { DEFAULT_STORE_PATH, SqliteStore } from "../store/index.js";

/** The store path of a command: `--store <path>`, or `.stagechart/runs.db` in the working directory. */
export const storePathFor = (path: string | undefined): string =>
  resolve(path ?? DEFAULT_STORE_PATH);

/** The run store of a command that stores runs, created when there is none yet. */
export function openStoreForCli(path: string | undefined): Result<SqliteStore> {
  return SqliteStore.open(storePathFor(path));
}

/**
 * The run store of a command that only needs runs already stored (`runs`, `show`, `resume`, …),
 * or `undefined` when there is no store file: none is created for it.
 */
export function openExistingStore(path: string | undefined): Result<SqliteStore> | undefined {
  const file = storePathFor(path);
  return isAbsent(file) ? undefined : SqliteStore.open(file);
}

/** No file at `file`; one that cannot even be looked at (EACCES) is not taken for absent. */
function isAbsent(file: string): boolean {
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
