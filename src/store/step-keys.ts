/**
 * How the SQLite store keys a step row: by the table's own rowid, `id`, made of its run's
 * `position` (the runs table's rowid, which a run keeps for good) in the high 32 bits and its
 * step number in the low ones. A run's steps are then one range of keys, in step order, and a
 * commit writes the row alone: a separate index of (run_id, step) took a page of its own in every
 * commit, a fifth of the WAL frames a step wrote (`test/store/commit-pages.test.ts`).
 *
 * Keys stay in SQLite's 64-bit integers for 2^31 runs of up to 2^32 steps each; a step number
 * past that fails the table's check, as a key made for a run that is not there (NULL) does.
 *
 * The fragments below are SQL; each `?` is the run id, bound where the fragment stands.
 */

/** The key of step `?` (bound second) of run `?` (bound first); NULL when there is no such run. */
export const STEP_KEY = "((SELECT position FROM runs WHERE run_id = ?) << 32) + ?";

/**
 * Put before a statement reading one run's steps: names `run.low`, the key of its step 0 (no
 * row when there is no such run, so the statement finds no steps). The run id is `runId`, a
 * parameter (`?`, bound first, unless named).
 */
export const withRun = (runId = "?"): string =>
  `WITH run (low) AS (SELECT position << 32 FROM runs WHERE run_id = ${runId})`;
export const WITH_RUN = withRun();

/** The condition that a row `alias` of steps is one of `WITH_RUN`'s run: a range of keys. */
export const inRun = (alias = "steps"): string =>
  `${alias}.id > (SELECT low FROM run) AND ${alias}.id < (SELECT low FROM run) + 4294967296`;

/** The same for the run in the row `run` of runs (a subquery about each of several runs). */
export const ofRunRow = (run: string, alias = "steps"): string =>
  `${alias}.id > (${run}.position << 32) AND ${alias}.id < ((${run}.position + 1) << 32)`;

/** Step `alias` of `WITH_RUN`'s run is at most step `bound` (an SQL expression, say `?`). */
export const upToStep = (bound: string, alias = "steps"): string =>
  `${alias}.id <= (SELECT low FROM run) + ${bound}`;
