import { StagechartError } from "../errors.js";

/** Every error the store hands back, in one place. */

export const storeUnavailable = (path: string, cause: unknown): StagechartError =>
  new StagechartError(
    "Session/StoreUnavailable",
    `cannot open the store at ${path}: ${cause instanceof Error ? cause.message : String(cause)}`,
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

export const runNotFound = (runId: string): StagechartError =>
  new StagechartError("Session/RunNotFound", `no run ${runId} in the store`, { runId });

export const auditRunMismatch = (runId: string, eventRunId: string): StagechartError =>
  new StagechartError(
    "Session/AuditRunMismatch",
    `an event of run ${eventRunId} was committed to run ${runId}`,
    { runId, eventRunId },
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
