import type { Result } from "../../../src/errors.js";
import type { AsyncRunStore } from "../../../src/store/postgres/async-run-store.js";

/** A store on a new, empty database, and raw access to that database behind its back. */
export interface FreshStore {
  store: AsyncRunStore;
  /** Opens the same database again, as another process would. */
  reopen(options?: { now?: () => number }): Promise<Result<AsyncRunStore>>;
  /** Runs one SQL statement as written (the same text in both dialects); its rows. */
  sql(text: string): Promise<Record<string, unknown>[]>;
}

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
