import { type ChainRow, type StoredSnapshotText, snapshotOfChain } from "../snapshot-chain.js";

/**
 * Snapshots as this store's TEXT `snapshot` column holds them, as the SQLite store stores them
 * (snapshot-chain.ts): a keyframe's JSON, or a patch against the step before, `snapshot_base`
 * naming the chain's keyframe. A row of an earlier stagechart may hold a zlib delta against its
 * keyframe, in base64 since a TEXT column holds only text: a patch is a JSON array, `[` first,
 * which base64 never begins with.
 */

/** The column's text and base for a snapshot as stored. */
export function snapshotColumn({ snapshot, base }: StoredSnapshotText): {
  text: string;
  base: number | null;
} {
  return { text: typeof snapshot === "string" ? snapshot : snapshot.toString("base64"), base };
}

/** A row of a snapshot's chain as this store reads it. */
export interface SnapshotRow {
  step: number;
  snapshot: string;
  base: number | null;
}

/** The snapshot a chain of rows ends with (see `snapshotOfChain`). */
export function snapshotOfRows(rows: readonly SnapshotRow[]): unknown {
  return snapshotOfChain(rows.map(asChainRow));
}

const asChainRow = ({ step, snapshot, base }: SnapshotRow): ChainRow => ({
  step,
  base,
  snapshot: base !== null && !snapshot.startsWith("[") ? Buffer.from(snapshot, "base64") : snapshot,
});

/**
 * The rows of a run's snapshot after step $2 (its keyframe's, then the patches up to it), the
 * last one's stamp with them.
 */
export const SNAPSHOT_CHAIN = `WITH last AS (SELECT step, snapshot_base FROM steps
    WHERE run_id = $1 AND step <= $2 AND snapshot IS NOT NULL ORDER BY step DESC LIMIT 1)
  SELECT s.step, s.snapshot, s.snapshot_base AS base, s.definition_hash AS "definitionHash",
    s.stagechart_version AS "stagechartVersion", s.at AS "updatedAt"
  FROM last, steps s
  WHERE s.run_id = $1 AND s.snapshot IS NOT NULL
    AND s.step BETWEEN coalesce(last.snapshot_base, last.step) AND last.step
  ORDER BY s.step`;
