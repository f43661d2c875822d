import { err, ok, type Result, StagechartError } from "../errors.js";
import { thisRequester } from "./live-control.js";
import type { PruneProgress, PruneReport, PruneRequest } from "./prune-records.js";
import type { PruneStore } from "./store-port.js";

/** Runs deleted per transaction unless told: a live run's commit waits at most for one batch. */
export const DEFAULT_PRUNE_BATCH = 100;
const LARGEST_BATCH = 10_000;

export interface PruneOptions {
  /**
   * Prune runs that ended before this: an ISO 8601 date or time (`2025-01-31`), a `Date`, or an
   * age (`30d`, `12h`, `90m`, `2w`) counted back from now.
   */
  endedBefore?: string | Date;
  /** Prune all but the newest `keep` ended runs (by creation). */
  keep?: number;
  /**
   * Keep the runs; cut each one's step history down to its last snapshot (its audit log,
   * journal and transcripts stay whole). Runs are deleted whole otherwise.
   */
  historyOnly?: boolean;
  /** Report what would go and the bytes it holds; change nothing. */
  dryRun?: boolean;
  /** Runs per transaction (default 100). */
  batchSize?: number;
  /** Give the freed space back afterwards (SQLite: `VACUUM`; PostgreSQL: `VACUUM` its tables). */
  vacuum?: boolean;
  /** Who prunes, as the store's prune log records it (default: this user, host and process). */
  requestedBy?: string;
  /** Told after each batch is committed. */
  onBatch?: (progress: PruneProgress) => void;
  /** The clock an age counts back from. */
  now?: () => number;
}

const AGE = /^(\d+)(ms|s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * Retention: deletes the ended runs the options select — those that ended before a date, those
 * beyond the newest `keep`, or (both given) those that are both — from any store, in batches
 * that live runs' commits go on between; or cuts their step history (`historyOnly`). Running,
 * queued and suspended runs and runs another process holds the lease of always stay. The store
 * records the prune and every run it took in its prune log, the one exception its append-only
 * audit log allows. `Validation/PruneCriteriaInvalid` for options that select nothing or do not read.
 */
export async function pruneRuns(
  store: PruneStore,
  options: PruneOptions,
): Promise<Result<PruneReport>> {
  const request = pruneRequest(options);
  if (!request.ok) return request;
  return store.prune(request.value);
}

/** The options as a store's request, checked. */
export function pruneRequest(options: PruneOptions): Result<PruneRequest> {
  const { keep, batchSize = DEFAULT_PRUNE_BATCH } = options;
  if (options.endedBefore === undefined && keep === undefined)
    return invalid("a prune needs --ended-before, --keep or both: which ended runs go", {});
  if (keep !== undefined && !(Number.isSafeInteger(keep) && keep >= 0))
    return invalid(`--keep takes a whole number of runs (0 or more), not ${keep}`, { keep });
  if (!(Number.isSafeInteger(batchSize) && batchSize >= 1 && batchSize <= LARGEST_BATCH))
    return invalid(`--batch-size takes a whole number from 1 to ${LARGEST_BATCH}`, { batchSize });
  const endedBefore =
    options.endedBefore === undefined
      ? ok(undefined)
      : cutoff(options.endedBefore, options.now ?? Date.now);
  if (!endedBefore.ok) return endedBefore;
  const requester = thisRequester();
  return ok({
    ...(endedBefore.value !== undefined && { endedBefore: endedBefore.value }),
    ...(keep !== undefined && { keep }),
    scope: options.historyOnly ? "history" : "runs",
    dryRun: options.dryRun ?? false,
    batchSize,
    vacuum: options.vacuum ?? false,
    requestedBy:
      options.requestedBy ?? `${requester.user}@${requester.host} (pid ${requester.pid})`,
    ...(options.onBatch && { onBatch: options.onBatch }),
  });
}

/** A date, a time or an age back from now, as the ISO timestamp runs are stamped with. */
function cutoff(given: string | Date, now: () => number): Result<string> {
  if (given instanceof Date) {
    return Number.isNaN(given.getTime())
      ? invalid("--ended-before was given an invalid Date", { endedBefore: String(given) })
      : ok(given.toISOString());
  }
  const age = AGE.exec(given.trim());
  if (age)
    return ok(new Date(now() - Number(age[1]) * (UNIT_MS[age[2] as string] ?? 0)).toISOString());
  // A date alone, or a date and time: what Date.parse reads of ISO 8601, nothing looser.
  const iso = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/;
  const time = iso.test(given.trim()) ? Date.parse(given.trim()) : Number.NaN;
  if (Number.isNaN(time))
    return invalid(
      `--ended-before takes an ISO 8601 date or time (2025-01-31, 2025-01-31T12:00Z) or an age (30d, 12h, 90m, 2w), not "${given}"`,
      { endedBefore: given },
    );
  return ok(new Date(time).toISOString());
}

const invalid = (message: string, context: Record<string, unknown>) =>
  err(new StagechartError("Validation/PruneCriteriaInvalid", message, context));
