import type { JsonValue } from "../../definitions/contract.js";
import type { MemoryEntry } from "../../definitions/memory.js";
import { err, ok, type Result } from "../../errors.js";
import type { AuditEvent } from "../../events/audit.js";
import { decodeJournalEntry } from "../../runtime/journal.js";
import type { RunRecord, StepRecord, StoredSnapshot } from "../../runtime/run-records.js";
import type { JournalRow, RunTranscriptRow } from "../../runtime/store-port.js";
import { decodeRow } from "../../runtime/stored-rows.js";
import type { TranscriptRow } from "../../runtime/transcripts.js";
import * as z from "../../zod.js";
import {
  decodeSnapshot,
  eventsAfter,
  fromRunRow,
  type RunRow,
  type StepEventsRow,
} from "../records.js";
import { noSnapshot, runNotFound } from "../store-errors.js";
import { entryOf } from "../tool-results.js";
import type { Query } from "./queries.js";
import * as q from "./queries.js";
import { SNAPSHOT_CHAIN, type SnapshotRow, snapshotOfRows } from "./snapshot-text.js";

/**
 * What the PostgreSQL store reads back of a run: its snapshots and steps, its audit log, its
 * journal and transcripts, and pipeline memory. Rows read as the SQLite store reads them.
 */

export async function getRun(query: Query, runId: string): Promise<Result<RunRecord>> {
  const { rows } = await query(`SELECT ${q.RUN_COLUMNS} FROM runs WHERE run_id = $1`, [runId]);
  return rows[0] ? ok(fromRunRow(rows[0] as RunRow)) : err(runNotFound(runId));
}

/** The steps holding a run's events after a seq; `$1`: the run, `$2`: the seq. */
const AUDIT_BY_STEP = `SELECT last_seq AS "lastSeq", previous, events FROM (
    SELECT step, last_seq, events, LAG(last_seq, 1, 0) OVER (ORDER BY step) AS previous
    FROM steps WHERE run_id = $1) run_steps
  WHERE last_seq > $2 ORDER BY step`;

/** Past any step a run has (steps are INTEGER): with it, a chain read gives the run's latest. */
const LAST_STEP = 2 ** 31 - 1;

export async function getSnapshot(query: Query, runId: string): Promise<Result<StoredSnapshot>> {
  const { rows } = await query(SNAPSHOT_CHAIN, [runId, LAST_STEP]);
  const last = rows.at(-1) as (StoredSnapshot & SnapshotRow) | undefined;
  if (!last) return err(noSnapshot(runId));
  const { definitionHash, stagechartVersion, updatedAt } = last;
  const stamp = { definitionHash, stagechartVersion, updatedAt };
  return decodeSnapshot(runId, stamp, () => snapshotOfRows(rows as SnapshotRow[]));
}

export async function stepsOf(query: Query, runId: string): Promise<StepRecord[]> {
  const { rows } = await query(
    `SELECT step, last_seq AS "lastSeq", at FROM steps WHERE run_id = $1 ORDER BY step`,
    [runId],
  );
  return rows as StepRecord[];
}

export async function snapshotAtStep(query: Query, runId: string, step: number): Promise<unknown> {
  const { rows } = await query(SNAPSHOT_CHAIN, [runId, Math.min(step, LAST_STEP)]);
  return rows.length === 0 ? undefined : snapshotOfRows(rows as SnapshotRow[]);
}

/** In order; a row that does not read back is there in its place, marked `damaged`. */
export async function auditOf(
  query: Query,
  runId: string,
  afterSeq: number,
): Promise<AuditEvent[]> {
  const { rows } = await query(AUDIT_BY_STEP, [runId, afterSeq]);
  return eventsAfter(runId, rows as StepEventsRow[], afterSeq);
}

export async function journalEntry<T>(
  query: Query,
  key: string,
  shape: z.core.$ZodType<T>,
): Promise<T | undefined> {
  const { rows } = await query("SELECT value FROM journal WHERE key = $1", [key]);
  return rows[0] ? decodeJournalEntry(key, rows[0].value, shape) : undefined;
}

/** A stage execution's transcript entries before `before` (all without it), in key order. */
export async function transcriptRows(
  query: Query,
  stageExecutionId: string,
  before?: string,
): Promise<TranscriptRow[]> {
  const { rows } = await query(
    `SELECT t.key, t.entry, t.result_of AS "resultOf", j.value AS "resultSource"
     FROM transcripts t LEFT JOIN journal j ON j.key = t.result_of
     WHERE t.stage_execution_id = $1 AND ($2::text IS NULL OR t.key < $2) ORDER BY t.key`,
    [stageExecutionId, before ?? null],
  );
  return rows.map((row) => ({ key: row.key, entry: entryOf(stageExecutionId, row) }));
}

export async function journalOf(query: Query, runId: string): Promise<JournalRow[]> {
  const { rows } = await query(
    "SELECT key, value FROM journal WHERE run_id = $1 ORDER BY position",
    [runId],
  );
  return rows as JournalRow[];
}

export async function transcriptsOf(query: Query, runId: string): Promise<RunTranscriptRow[]> {
  const { rows } = await query(
    `SELECT t.stage_execution_id AS "stageExecutionId", t.key, t.entry,
       t.result_of AS "resultOf", j.value AS "resultSource"
     FROM transcripts t LEFT JOIN journal j ON j.key = t.result_of
     WHERE t.run_id = $1 ORDER BY t.stage_execution_id, t.key`,
    [runId],
  );
  return rows.map((row) => ({
    stageExecutionId: row.stageExecutionId,
    key: row.key,
    entry: entryOf(row.stageExecutionId, row),
  }));
}

export async function recall(
  query: Query,
  namespace: string,
  key: string,
): Promise<JsonValue | undefined> {
  const { rows } = await query("SELECT value FROM memory WHERE namespace = $1 AND key = $2", [
    namespace,
    key,
  ]);
  return rows[0] ? decodeMemory(namespace, key, rows[0].value) : undefined;
}

export async function recent(
  query: Query,
  namespace: string,
  limit: number,
): Promise<MemoryEntry[]> {
  const { rows } = await query(
    `SELECT key, value, updated_at AS "updatedAt" FROM memory WHERE namespace = $1
     ORDER BY updated_at DESC, position DESC LIMIT $2`,
    [namespace, limit],
  );
  return rows.map((row) => ({
    key: row.key,
    value: decodeMemory(namespace, row.key, row.value),
    updatedAt: row.updatedAt,
  }));
}

const JSON_VALUE: z.ZodMiniType<JsonValue> = z.json();

const decodeMemory = (namespace: string, key: string, text: string): JsonValue =>
  decodeRow(text, JSON_VALUE, `memory entry ${namespace}/${key}`, { namespace, key });
