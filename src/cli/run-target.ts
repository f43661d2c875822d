import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import type { Result } from "../errors.js";
import { type ReopenOptions, reopenRun } from "../runtime/reopen.js";
import {
  type ResumeOptions,
  type RunHandle,
  type RunOptions,
  resumeRun,
  startRun,
} from "../runtime/run.js";
import type { RunStore } from "../runtime/store-port.js";
import { PostgresStore } from "../store/postgres/postgres-store.js";
import { reopenSharedRun, resumeSharedRun, startSharedRun } from "../store/postgres/shared-runs.js";
import type { SqliteStore } from "../store/sqlite-store.js";
import { isPostgresUrl, noStoreFileFor, openStoreForCli, storeSpecOf } from "./store.js";

type Launch<T> = Promise<Result<T>>;

/**
 * The store a run started or continued in this process goes to (`run`, `resume`, `cancel`,
 * `override`, `redo`): read through the asynchronous contract, and the runtime's launches on it
 * — `startRun` and kin on the SQLite file, `startSharedRun` and kin (an owned run) on PostgreSQL.
 */
export interface RunTarget {
  store: RunStore;
  start(pipeline: PipelineDefinition, options: Omit<RunOptions, "store">): Launch<RunHandle>;
  resume(
    pipeline: PipelineDefinition,
    runId: string,
    options: Omit<ResumeOptions, "store">,
  ): Launch<RunHandle>;
  reopen(
    pipeline: PipelineDefinition,
    runId: string,
    options: Omit<ReopenOptions, "store">,
  ): Launch<RunHandle>;
  close(): Promise<void>;
}

/** The run target of `--store` (else `$STAGECHART_STORE`), a SQLite file created when absent. */
export async function openRunTarget(flag: string | undefined): Promise<Result<RunTarget>> {
  const spec = storeSpecOf(flag);
  if (isPostgresUrl(spec)) {
    const opened = await PostgresStore.open(spec);
    return opened.ok ? { ok: true, value: sharedTarget(opened.value) } : opened;
  }
  const opened = openStoreForCli(flag);
  return opened.ok ? { ok: true, value: sqliteTarget(opened.value) } : opened;
}

/** `openRunTarget` for runs already stored: `undefined` when there is no SQLite file. */
export async function openExistingRunTarget(
  flag: string | undefined,
): Promise<Result<RunTarget> | undefined> {
  return noStoreFileFor(flag) ? undefined : openRunTarget(flag);
}

const sqliteTarget = (store: SqliteStore): RunTarget => ({
  store: store,
  start: async (pipeline, options) => startRun(pipeline, { ...options, store }),
  resume: async (pipeline, runId, options) => resumeRun(pipeline, runId, { ...options, store }),
  reopen: async (pipeline, runId, options) => reopenRun(pipeline, runId, { ...options, store }),
  close: async () => store.close(),
});

const sharedTarget = (store: PostgresStore): RunTarget => ({
  store,
  start: (pipeline, options) => startSharedRun(pipeline, { ...options, store }),
  resume: (pipeline, runId, options) => resumeSharedRun(pipeline, runId, { ...options, store }),
  reopen: (pipeline, runId, options) => reopenSharedRun(pipeline, runId, { ...options, store }),
  close: () => store.close(),
});
