import { type StoredSnapshotText, snapshotJson } from "../snapshot-delta.js";

/**
 * Snapshots as this store's TEXT `snapshot` column holds them (migration 13): as the SQLite store
 * stores them (snapshot-delta.ts), a snapshot's JSON or a zlib delta against its run's keyframe,
 * the step `snapshot_base`; the delta's bytes in base64, since a TEXT column holds only text.
 */

/** The column's text and base for a snapshot as stored. */
export function snapshotColumn({ snapshot, base }: StoredSnapshotText): {
  text: string;
  base: number | null;
} {
  return { text: typeof snapshot === "string" ? snapshot : snapshot.toString("base64"), base };
}

/** A step row's snapshot, with its keyframe's text (null when it has none, or that row is gone). */
export interface SnapshotRow {
  snapshot: string;
  base: number | null;
  keyframe: string | null;
}

/** The JSON a step stored; throws when its delta does not inflate against its keyframe. */
export function snapshotJsonOf({ snapshot, base, keyframe }: SnapshotRow): string {
  const stored = base === null ? snapshot : Buffer.from(snapshot, "base64");
  return snapshotJson({ snapshot: stored, base }, keyframe);
}

/**
 * The columns a snapshot read selects from the step row `s`, joined to its keyframe's row `k`
 * (`KEYFRAME_JOIN`), as `SnapshotRow` names them.
 */
export const SNAPSHOT_COLUMNS = "s.snapshot, s.snapshot_base AS base, k.snapshot AS keyframe";

export const KEYFRAME_JOIN =
  "LEFT JOIN steps k ON k.run_id = s.run_id AND k.step = s.snapshot_base";
