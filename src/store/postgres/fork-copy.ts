import type { Query } from "./queries.js";

/** The highest journal and transcript positions when a step was committed: what it had recorded. */
export interface StepMarks {
  journal: number;
  transcript: number;
}

/** The step's marks; none for a step committed before the store kept them (or no such step). */
export async function forkMarks(
  query: Query,
  runId: string,
  step: number,
): Promise<StepMarks | undefined> {
  const { rows } = await query(
    `SELECT journal_mark AS journal, transcript_mark AS transcript FROM steps
     WHERE run_id = $1 AND step = $2 AND journal_mark IS NOT NULL`,
    [runId, step],
  );
  return rows[0] && { journal: Number(rows[0].journal), transcript: Number(rows[0].transcript) };
}

/**
 * Copies the journal and transcript rows `source` had written up to its marks to `target`,
 * under the new run's keys, renamed as the SQLite store's ForkCopier does (src/store/fork-copier.ts):
 * run ids have no `/`, so where a key names the run it is always a whole segment.
 */
export async function copyForked(
  query: Query,
  source: string,
  target: string,
  marks: StepMarks,
): Promise<void> {
  await query(COPY_JOURNAL, [source, target, marks.journal]);
  await query(COPY_TRANSCRIPTS, [source, target, marks.transcript]);
}

const COPY_JOURNAL = `INSERT INTO journal (key, run_id, value, recorded_at)
  SELECT replace(replace(key, ':' || $1::text || '/', ':' || $2::text || '/'),
                 '/' || $1::text || '/', '/' || $2::text || '/'),
         $2::text, value, recorded_at
  FROM journal WHERE run_id = $1::text AND position <= $3::bigint ORDER BY position`;

const COPY_TRANSCRIPTS = `INSERT INTO transcripts (stage_execution_id, key, run_id, entry, result_of)
  SELECT $2::text || substr(stage_execution_id, length($1::text) + 1), key, $2::text, entry,
         replace(replace(result_of, ':' || $1::text || '/', ':' || $2::text || '/'),
                 '/' || $1::text || '/', '/' || $2::text || '/')
  FROM transcripts WHERE run_id = $1::text AND position <= $3::bigint ORDER BY position`;
