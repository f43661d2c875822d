import type { Result } from "../../../src/errors.js";
import type { RunStore } from "../../../src/runtime/store-port.js";

/** A store on a new, empty database, and raw access to that database behind its back. */
export interface FreshStore {
  store: RunStore;
  /** Opens the same database again, as another process would. */
  reopen(options?: { now?: () => number }): Promise<Result<RunStore>>;
  /** Runs one SQL statement as written (the same text in both dialects); its rows. */
  sql(text: string): Promise<Record<string, unknown>[]>;
  /**
   * SQL for what the two layouts of journal and transcript entries store differently: tables of
   * their own (PostgreSQL), or the `journal` and `transcripts` columns of each step's row (SQLite,
   * migration 11), which its trigger keeps append-only until the statements drop it.
   */
  entries: EntrySql;
}

/** One statement each, or a list to run in order. */
export interface EntrySql {
  /** Every stored journal value and transcript entry, as rows with an `entry` column. */
  stored: string;
  /** Removes run `runId`'s journal. */
  dropJournal(runId: string): string[];
  /** Writes `value` over the one journal entry and `entry` over the one transcript entry stored. */
  damageOnly(journal: { key: string; value: string }, transcript: { entry: string }): string[];
}

/** The layout of tables of their own (PostgreSQL). */
export const ENTRY_TABLES: EntrySql = {
  stored: "SELECT entry FROM transcripts UNION ALL SELECT value AS entry FROM journal",
  dropJournal: (runId) => [`DELETE FROM journal WHERE run_id = '${runId}'`],
  damageOnly: (journal, transcript) => [
    `UPDATE journal SET value = '${journal.value}'`,
    `UPDATE transcripts SET entry = '${transcript.entry}'`,
  ],
};

/** How the suite gets stores of one kind: each is closed, and its database dropped, after its test. */
export interface StoreHarness {
  fresh(options?: { now?: () => number }): Promise<FreshStore>;
}

/** The value of a result that must have succeeded. */
export function okValue<T>(result: Result<T>): T {
  if (!result.ok) throw result.error;
  return result.value;
}

/** The error of a result that must have failed. */
export function failure<T>(result: Result<T>) {
  if (result.ok) throw new Error(`expected an error, got ${JSON.stringify(result.value)}`);
  return result.error;
}

/** Breaks the JSON of the run's latest snapshot (its last step that has one), in either dialect. */
export async function damageLatestSnapshot(sql: FreshStore["sql"], runId: string): Promise<void> {
  await sql(
    `UPDATE steps SET snapshot = '{'
     WHERE run_id = '${runId}' AND step = (SELECT MAX(step) FROM steps latest
       WHERE latest.run_id = '${runId}' AND latest.snapshot IS NOT NULL)`,
  );
}

export const newRun = (runId: string) => ({
  runId,
  pipelineId: "plan-build",
  definitionHash: "hash-1",
  options: { pipelineFile: "machines/plan-build.yaml", model: "scripted:plan.script.yaml" },
});

/** A clock the test moves by hand. */
export function manualClock(start = Date.parse("2030-01-01T00:00:00.000Z")) {
  let time = start;
  return {
    now: () => time,
    advance: (ms: number) => {
      time += ms;
    },
  };
}

export const started = (runId: string, payload: Record<string, unknown> = {}) => ({
  type: "RunStarted" as const,
  runId,
  payload,
});
