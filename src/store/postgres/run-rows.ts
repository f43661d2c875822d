import { err, ok, type Result } from "../../errors.js";
import type { NewRun, RunPatch, RunRecord } from "../../runtime/run-records.js";
import { fromRunRow, newRunRecord, patchedRow, type RunRow, toRunRow } from "../records.js";
import { runExists, runNotFound } from "../store-errors.js";
import type { Query } from "./queries.js";
import * as q from "./queries.js";

// What the PostgreSQL store writes to a run's row, at `at` (its clock's timestamp).

/** Stores a new run's row, created and updated `at`; `Session/RunExists` for an id taken. */
export async function insertRun(query: Query, run: NewRun, at: string): Promise<Result<RunRecord>> {
  const record = newRunRecord(run, at);
  if (!record.ok) return record;
  const row = toRunRow(record.value);
  const inserted = await query(q.INSERT_RUN, [
    ...[row.runId, row.pipelineId, row.status, row.createdAt, row.updatedAt],
    ...[row.definitionHash, row.stagechartVersion, row.options, row.error, row.output],
    row.wakeAt,
  ]);
  return inserted.rowCount === 0 ? err(runExists(run.runId)) : record;
}

/** Changes the run's row, updated `at`, under its row lock (inside the caller's transaction). */
export async function updateRun(
  query: Query,
  runId: string,
  patch: RunPatch,
  at: string,
): Promise<Result<RunRecord>> {
  const found = await query(`SELECT ${q.RUN_COLUMNS} FROM runs WHERE run_id = $1 FOR UPDATE`, [
    runId,
  ]);
  if (found.rowCount === 0) return err(runNotFound(runId));
  const row = patchedRow(found.rows[0] as RunRow, patch, at);
  await query(q.UPDATE_RUN, [
    ...[runId, row.status, row.updatedAt, row.definitionHash],
    ...[row.options, row.error, row.output, row.wakeAt],
  ]);
  return ok(fromRunRow(row));
}
