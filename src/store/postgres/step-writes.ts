import type { AuditEvent } from "../../events/audit.js";
import type { StepCommit } from "../../runtime/persistence.js";
import { VERSION } from "../../version.js";
import { controlNotTaken } from "../control-requests.js";
import { toStepEvents } from "../records.js";
import { runIdOfJournalKey } from "../run-ids.js";
import type { StoredSnapshotText } from "../snapshot-chain.js";
import { auditRunMismatch, leaseLost, runNotFound } from "../store-errors.js";
import { type TranscriptWrite, transcriptWrites } from "../tool-results.js";
import type { Query } from "./queries.js";
import { snapshotColumn } from "./snapshot-text.js";

type JournalWrite = NonNullable<StepCommit["journal"]>[number];

/** A step as stored: its number, and its events with the run's next sequence numbers. */
export interface CommittedStep {
  step: number;
  events: AuditEvent[];
}

/**
 * Writes one step in one statement, a call of the database's `stagechart_commit_step`
 * (migration 13): its journal and transcript entries, its row (its events, its snapshot, the
 * marks a fork copies up to) numbered after the run's last, and the control requests it settles,
 * under the run's row lock and, with an owner, its lease. On the pool it is a transaction of its
 * own (all of it or nothing); in the caller's transaction, a part of that. `snapshot` is what the
 * row stores for the step's snapshot (a patch, or its JSON); its JSON when not given. What the
 * function refuses comes back as the store's errors: `Session/RunNotFound`, and
 * `Session/LeaseLost` for a lease another owner took or a control request no longer taken.
 */
export async function appendStep(
  query: Query,
  runId: string,
  step: StepCommit,
  at: string,
  snapshot?: StoredSnapshotText,
): Promise<CommittedStep> {
  for (const input of step.events)
    if (input.runId !== runId) throw auditRunMismatch(runId, input.runId);
  const stored =
    snapshot ??
    (step.snapshot === undefined
      ? undefined
      : { snapshot: JSON.stringify(step.snapshot), base: null });
  const column = stored && snapshotColumn(stored);
  const journal = step.journal ?? [];
  const transcripts = lastOfEachKey(transcriptWrites(step));
  const controls = step.controls ?? [];
  const events = step.events.map((input) => ({ at, ...input }));
  let committed: { step: number; seq: number };
  try {
    const { rows } = await query(
      COMMIT_STEP.text,
      [
        ...[runId, step.owner ?? null, at, events.length, toStepEvents(events)],
        ...[column?.text ?? null, column?.base ?? null, step.definitionHash ?? null],
        column ? VERSION : null,
        ...journalColumns(journal),
        ...transcriptColumns(transcripts),
        controls.map(({ id }) => id),
        controls.map(({ status }) => status),
        controls.map(({ error }) => (error ? JSON.stringify(error) : null)),
      ],
      COMMIT_STEP.name,
    );
    committed = { step: Number(rows[0].step), seq: Number(rows[0].seq) };
  } catch (failure) {
    throw refusal(failure, runId, step.owner) ?? failure;
  }
  const first = committed.seq - events.length + 1;
  const recorded = events.map((event, index): AuditEvent => ({ ...event, seq: first + index }));
  return { step: committed.step, events: recorded };
}

/** Made at every step, so prepared on each connection once (`Query`'s name). */
const COMMIT_STEP = {
  name: "stagechart_commit_step",
  text: `SELECT committed_step AS step, committed_seq AS seq FROM stagechart_commit_step(
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
};

/** The store's error for what `stagechart_commit_step` refused, by the SQLSTATE it raised. */
function refusal(failure: unknown, runId: string, owner: string | undefined) {
  const { code, detail } = (failure ?? {}) as { code?: unknown; detail?: unknown };
  if (code === "SC001") return runNotFound(runId);
  if (code === "SC002") return leaseLost(runId, owner ?? "nobody");
  if (code === "SC003") return controlNotTaken(Number(detail));
  return undefined;
}

/** Journal entries in one statement; a key already recorded keeps its first value. */
export async function writeJournal(query: Query, entries: JournalWrite[], at: string) {
  if (entries.length === 0) return;
  await query(INSERT_JOURNAL, [...journalColumns(entries), entries.map(() => at)]);
}

/**
 * Transcript entries in one statement; a key written again takes the last entry but keeps its
 * place, as an upsert of each in turn would (one statement may not update a row twice).
 */
export async function writeTranscripts(query: Query, entries: TranscriptWrite[]) {
  const rows = lastOfEachKey(entries);
  if (rows.length === 0) return;
  await query(UPSERT_TRANSCRIPTS, transcriptColumns(rows));
}

export async function lastSeqWith(query: Query, runId: string): Promise<number> {
  const { rows } = await query(
    "SELECT last_seq AS seq FROM steps WHERE run_id = $1 ORDER BY step DESC LIMIT 1",
    [runId],
  );
  return Number(rows[0]?.seq ?? 0);
}

const journalColumns = (entries: JournalWrite[]) => [
  entries.map((entry) => entry.key),
  entries.map((entry) => runIdOfJournalKey(entry.key)),
  entries.map((entry) => JSON.stringify(entry.value)),
];

const transcriptColumns = (rows: TranscriptWrite[]) => [
  rows.map((row) => row.stageExecutionId),
  rows.map((row) => row.key),
  rows.map((row) => row.runId),
  rows.map((row) => row.entry),
  rows.map((row) => row.resultOf),
];

/** Each key's last entry, in the place of its first. */
function lastOfEachKey(entries: TranscriptWrite[]): TranscriptWrite[] {
  const last = new Map<string, TranscriptWrite>();
  for (const entry of entries) last.set(JSON.stringify([entry.stageExecutionId, entry.key]), entry);
  return [...last.values()];
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
