import type { AuditEvent } from "../../events/audit.js";
import type { StepCommit } from "../../runtime/persistence.js";
import { VERSION } from "../../version.js";
import { toStepEvents } from "../records.js";
import { runIdOfJournalKey } from "../run-ids.js";
import { auditRunMismatch, leaseLost, runNotFound } from "../store-errors.js";
import { type TranscriptWrite, transcriptWrites } from "../tool-results.js";
import { settleInStep } from "./control-queue.js";
import type { Query } from "./queries.js";

type JournalWrite = NonNullable<StepCommit["journal"]>[number];

/**
 * Writes one step inside the caller's transaction: its journal and transcript entries, and its
 * step row (with the marks a fork copies up to), which holds its snapshot and its events with
 * the run's next sequence numbers, and the control requests it settles. Touching the run's row first locks it, so concurrent commits
 * to one run take turns and its sequence stays gapless.
 */
export async function appendStep(
  query: Query,
  runId: string,
  step: StepCommit,
  at: string,
): Promise<AuditEvent[]> {
  const touched = await query("UPDATE runs SET updated_at = $2 WHERE run_id = $1", [runId, at]);
  if (touched.rowCount === 0) throw runNotFound(runId);
  if (step.owner !== undefined) await holdsLease(query, runId, step.owner);
  let seq = await lastSeqWith(query, runId);
  const recorded = step.events.map((input): AuditEvent => {
    if (input.runId !== runId) throw auditRunMismatch(runId, input.runId);
    seq += 1;
    return { seq, at, ...input };
  });
  await writeJournal(query, step.journal ?? [], at);
  await writeTranscripts(query, transcriptWrites(step));
  const snapshot = step.snapshot === undefined ? null : JSON.stringify(step.snapshot);
  const version = snapshot === null ? null : VERSION;
  const events = toStepEvents(recorded);
  await query(INSERT_STEP, [
    runId,
    seq,
    at,
    snapshot,
    step.definitionHash ?? null,
    version,
    events,
  ]);
  await settleInStep(query, step.controls ?? [], at);
  return recorded;
}

/**
 * Fences a step written under a lease: a process that lost the run's lease (its lease expired
 * and another took the run over while it stalled) cannot store another step of it. The lease
 * row is read under a share lock, so a takeover waits for this step or this step sees it.
 */
async function holdsLease(query: Query, runId: string, owner: string): Promise<void> {
  const { rows } = await query("SELECT owner FROM leases WHERE run_id = $1 FOR SHARE", [runId]);
  if (rows[0]?.owner !== owner) throw leaseLost(runId, owner);
}

/** Journal entries in one statement; a key already recorded keeps its first value. */
export async function writeJournal(query: Query, entries: JournalWrite[], at: string) {
  if (entries.length === 0) return;
  await query(INSERT_JOURNAL, [
    entries.map((entry) => entry.key),
    entries.map((entry) => runIdOfJournalKey(entry.key)),
    entries.map((entry) => JSON.stringify(entry.value)),
    entries.map(() => at),
  ]);
}

/**
 * Transcript entries in one statement; a key written again takes the last entry but keeps its
 * place, as an upsert of each in turn would (one statement may not update a row twice).
 */
export async function writeTranscripts(query: Query, entries: TranscriptWrite[]) {
  const last = new Map<string, TranscriptWrite>();
  for (const entry of entries) last.set(JSON.stringify([entry.stageExecutionId, entry.key]), entry);
  const rows = [...last.values()];
  if (rows.length === 0) return;
  await query(UPSERT_TRANSCRIPTS, [
    rows.map((row) => row.stageExecutionId),
    rows.map((row) => row.key),
    rows.map((row) => row.runId),
    rows.map((row) => row.entry),
    rows.map((row) => row.resultOf),
  ]);
}

export async function lastSeqWith(query: Query, runId: string): Promise<number> {
  const { rows } = await query(
    "SELECT last_seq AS seq FROM steps WHERE run_id = $1 ORDER BY step DESC LIMIT 1",
    [runId],
  );
  return Number(rows[0]?.seq ?? 0);
}

// Rows go in in the order given, so their positions follow it.
const INSERT_JOURNAL = `INSERT INTO journal (key, run_id, value, recorded_at)
  SELECT key, run_id, value, recorded_at
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY
    AS given (key, run_id, value, recorded_at, n)
  ORDER BY n
  ON CONFLICT (key) DO NOTHING`;

const UPSERT_TRANSCRIPTS = `INSERT INTO transcripts (stage_execution_id, key, run_id, entry, result_of)
  SELECT stage_execution_id, key, run_id, entry, result_of
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY
    AS given (stage_execution_id, key, run_id, entry, result_of, n)
  ORDER BY n
  ON CONFLICT (stage_execution_id, key)
  DO UPDATE SET entry = excluded.entry, result_of = excluded.result_of`;

/**
 * The step's row, marked with the highest journal and transcript positions of its run: what it
 * had recorded by then (the run's row lock keeps its own writers in turn). Its snapshot is stored
 * here only, stamped with its definition hash (the run's, without one of its own) and version.
 */
const INSERT_STEP = `INSERT INTO steps (run_id, step, last_seq, at, snapshot, journal_mark,
    transcript_mark, definition_hash, stagechart_version, events)
  VALUES ($1, (SELECT COALESCE(MAX(step), 0) + 1 FROM steps WHERE run_id = $1), $2, $3, $4,
    (SELECT COALESCE(MAX(position), 0) FROM journal WHERE run_id = $1),
    (SELECT COALESCE(MAX(position), 0) FROM transcripts WHERE run_id = $1),
    CASE WHEN $4::text IS NOT NULL
      THEN COALESCE($5, (SELECT definition_hash FROM runs WHERE run_id = $1)) END,
    $6, $7)`;
