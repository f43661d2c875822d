import Database from "better-sqlite3";
import { StagechartError } from "../errors.js";

/** Every error the store hands back, in one place. */

const messageOf = (cause: unknown): string =>
  cause instanceof Error ? cause.message : String(cause);

/** A store that cannot be opened: its path is wrong, unreachable or not a database. */
export const storeUnavailable = (path: string, cause: unknown): StagechartError =>
  isCorruption(cause)
    ? storeDamaged(path, cause)
    : new StagechartError(
        "Session/StoreUnavailable",
        `cannot open the store at ${path}: ${messageOf(cause)}`,
        { path },
        { cause },
      );

/**
 * What a failing SQLite call means for the user: a damaged file is `Session/StoreCorrupt`, a
 * disk that is full, gone or read-only (or a store busy past the timeout) is
 * `Session/StoreUnavailable`, both naming the file. Errors of the store's own making (a
 * constraint, an SQL mistake) and anything that is not SQLite's are left as they are: bugs.
 */
export function storeFailure(path: string, cause: unknown): unknown {
  if (!(cause instanceof Database.SqliteError)) return cause;
  if (isCorruption(cause)) return storeDamaged(path, cause);
  if (OWN_MAKING.some((code) => cause.code.startsWith(code))) return cause;
  return new StagechartError(
    "Session/StoreUnavailable",
    `cannot use the store at ${path}: ${cause.message}`,
    { path },
    { cause },
  );
}

/**
 * The store's file was deleted or replaced under an open connection: its writes since are lost
 * with it (`storeGone` says which, and that there is nothing of them to resume).
 */
export const storeReplaced = (path: string, deleted: boolean): StagechartError =>
  new StagechartError(
    "Session/StoreUnavailable",
    `the store at ${path} was ${deleted ? "deleted" : "replaced by another file"} while in use: what was written to it since is not stored`,
    { path, storeGone: deleted ? "deleted" : "replaced" },
  );

/**
 * A run whose mark outside the database says it committed more steps than the store holds: the
 * WAL that held the rest was deleted or damaged after a crash.
 */
export const stepsLost = (
  path: string,
  mark: { runId: string; step: number; lastSeq: number; file: string },
  stored: { step: number; lastSeq: number },
  runExists: boolean,
): StagechartError => {
  const { runId } = mark;
  const had = `run ${runId} had committed ${mark.step} step(s) (audit seq ${mark.lastSeq})`;
  const left = !runExists
    ? "the store has no such run: its row and steps were lost"
    : stored.step === 0
      ? "the store holds none of them: they were lost"
      : `the store holds ${stored.step}: the later ones were lost`;
  const from = stored.step === 0 ? "starts it again" : `goes on from step ${stored.step}`;
  const next = runExists
    ? `resume --force ${from}, doing again what the lost steps did`
    : `remove ${mark.file} once this is dealt with`;
  return new StagechartError(
    "Session/StoreDamaged",
    `${had}, but ${left} with the write-ahead log (${path}-wal), deleted or damaged after a crash; ${next}`,
    {
      runId,
      path,
      committedSteps: mark.step,
      committedSeq: mark.lastSeq,
      storedSteps: stored.step,
      storedSeq: stored.lastSeq,
      runExists,
      mark: mark.file,
    },
  );
};

const OWN_MAKING = ["SQLITE_CONSTRAINT", "SQLITE_MISUSE", "SQLITE_RANGE", "SQLITE_MISMATCH"];

const isCorruption = (cause: unknown): boolean =>
  cause instanceof Database.SqliteError && cause.code.startsWith("SQLITE_CORRUPT");

const storeDamaged = (path: string, cause: unknown): StagechartError =>
  new StagechartError(
    "Session/StoreCorrupt",
    `the store at ${path} is damaged: ${messageOf(cause)}`,
    { path },
    { cause },
  );

export const storeTooNew = (
  found: number,
  supported: number,
  writtenBy: string | undefined,
): StagechartError =>
  new StagechartError(
    "Session/StoreTooNew",
    `the store has schema version ${found} (written by stagechart ${writtenBy}); this stagechart reads up to ${supported}`,
    { found, supported, writtenBy },
  );

export const runIdInvalid = (runId: string): StagechartError =>
  new StagechartError(
    "Validation/RunIdInvalid",
    `run id "${runId}" must be non-empty and contain no "/"`,
    { runId },
  );

export const runExists = (runId: string): StagechartError =>
  new StagechartError("Session/RunExists", `run ${runId} already exists`, { runId });

export const forkUnavailable = (runId: string, step: number): StagechartError =>
  new StagechartError(
    "Session/ForkUnavailable",
    `step ${step} of run ${runId} was committed before the store kept what a fork copies (its journal and transcripts up to it); fork from a later step`,
    { runId, step },
  );

export const runNotFound = (runId: string): StagechartError =>
  new StagechartError("Session/RunNotFound", `no run ${runId} in the store`, { runId });

export const auditRunMismatch = (runId: string, eventRunId: string): StagechartError =>
  new StagechartError(
    "Session/AuditRunMismatch",
    `an event of run ${eventRunId} was committed to run ${runId}`,
    { runId, eventRunId },
  );

/** A journal or transcript entry whose key names another run than the step it came with. */
export const entryMisfiled = (runId: string, entry: string): StagechartError =>
  new StagechartError(
    "Session/EntryRunMismatch",
    `the entry ${entry} was committed to run ${runId}, whose entries its key does not name`,
    { runId, entry },
  );

export const noSnapshot = (runId: string): StagechartError =>
  new StagechartError("Session/NoSnapshot", `run ${runId} has no persisted snapshot`, { runId });

export const snapshotCorrupt = (runId: string, updatedAt: string, cause: unknown) =>
  new StagechartError(
    "Session/SnapshotCorrupt",
    `the persisted snapshot of run ${runId} is not valid JSON`,
    { runId, updatedAt },
    { cause },
  );

export const runLocked = (runId: string, owner: string, expiresAt: number): StagechartError =>
  new StagechartError("Session/RunLocked", `run ${runId} is being run by ${owner}`, {
    runId,
    owner,
    expiresAt: new Date(expiresAt).toISOString(),
  });

export const leaseLost = (runId: string, owner: string): StagechartError =>
  new StagechartError("Session/LeaseLost", `${owner} no longer holds the lease of ${runId}`, {
    runId,
    owner,
  });

/** A step number another owner of the run committed first: this one lost its lease unawares. */
export const stepTaken = (runId: string, step: number): StagechartError =>
  new StagechartError(
    "Session/LeaseLost",
    `step ${step} of ${runId} was committed by another owner of the run: this owner lost its lease; its step is not stored`,
    { runId, step },
  );

export const definitionNotFound = (definitionHash: string): StagechartError =>
  new StagechartError(
    "Session/DefinitionNotFound",
    `no definition ${definitionHash} in the store: the run was not queued from this store`,
    { definitionHash },
  );

export const runNotQueued = (runId: string, status: string): StagechartError =>
  new StagechartError("Session/RunNotQueued", `run ${runId} is ${status}, not queued`, {
    runId,
    status,
  });
