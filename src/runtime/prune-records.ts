import type { StoredStatus } from "./run-records.js";

/*
 * What a prune asks of a store and what it answers (`PruneStore`), apart from the library
 * function (`pruneRuns`), so the store port and it share them without importing each other.
 */

/**
 * `runs`: whole ended runs go, with their audit logs, journals and transcripts. `history`: the
 * runs stay, audit log, journal and transcripts whole; only the snapshots of their steps before
 * the last go, the last one stored whole (forks and the step scrubber then start from it alone).
 */
export type PruneScope = "runs" | "history";

/** Which runs a prune takes: only ended ones, never one leased; both criteria when both given. */
export interface PruneSelection {
  /** Runs last updated (ended) before this ISO 8601 timestamp. */
  endedBefore?: string;
  /** All but the newest `keep` ended runs, by creation. */
  keep?: number;
}

export interface PruneRequest extends PruneSelection {
  scope: PruneScope;
  /** Tells what would go and the bytes it holds, and changes nothing. */
  dryRun: boolean;
  /** Runs per transaction: a live run's commits wait at most for one batch. */
  batchSize: number;
  /**
   * After pruning, gives the freed space back: SQLite runs `VACUUM` (the file shrinks; writers
   * wait meanwhile), PostgreSQL `VACUUM` on the store's tables (the space is reused, not returned).
   */
  vacuum: boolean;
  /** Who pruned, as the prune's record names it. */
  requestedBy: string;
  /** Told after each batch is committed. */
  onBatch?: (progress: PruneProgress) => void;
}

export interface PruneProgress {
  batch: number;
  runs: number;
  bytes: number;
}

/** A run a prune took (or would take), as the prune's record keeps it. */
export interface PrunedRun {
  runId: string;
  pipelineId: string;
  status: StoredStatus;
  createdAt: string;
  endedAt: string;
  steps: number;
  /** The bytes of its rows that go (all of them, or its earlier snapshots): summed row sizes. */
  bytes: number;
}

export interface PruneReport {
  /** The prune's record in the store's prune log; none for a dry run. */
  pruneId?: number;
  scope: PruneScope;
  dryRun: boolean;
  runs: PrunedRun[];
  /**
   * The bytes freed. Measured for a real prune — SQLite: pages no longer in use (page count
   * less free pages, before and after); PostgreSQL: the deleted rows' sizes — and for a dry run
   * the runs' summed row sizes.
   */
  bytesFreed: number;
  /** The store's size: SQLite its file's pages, PostgreSQL its tables with indexes and TOAST. */
  storeBytes: { before: number; after: number };
  batches: number;
  vacuumed: boolean;
}

/** What a prune was asked, as the store's prune log records it. */
export const pruneCriteria = (request: PruneRequest) => ({
  ...(request.endedBefore !== undefined && { endedBefore: request.endedBefore }),
  ...(request.keep !== undefined && { keep: request.keep }),
  batchSize: request.batchSize,
});
