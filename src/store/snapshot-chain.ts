import { crc32, inflateSync } from "node:zlib";
import { applyPatch, diffSnapshots, packPatch, unpackPatch } from "./snapshot-patch.js";

/**
 * A snapshot as a step row stores it: its JSON whole (`base` null, a keyframe), or a patch
 * against the snapshot of the run's step before (`base`, the keyframe its chain starts from):
 * `[that step, the keyframe's CRC-32, ...operations]` (packed, see `packPatch`).
 * A row written by an earlier stagechart may hold a zlib delta against its keyframe (a Buffer).
 */
export interface StoredSnapshotText {
  snapshot: string | Buffer;
  base: number | null;
}

/**
 * A chain of patches is cut (the next snapshot stored whole) past this many links, or past one
 * link per `KEYFRAME_BYTES_PER_LINK` of its keyframe, if that is more: a keyframe then costs
 * about that many bytes a step however large the snapshot grows (a run's snapshot grows with
 * its stages; cut every 256 links, a 5,000-stage chain stored twice the bytes a stage that a
 * 100-stage one did).
 */
const LONGEST_CHAIN = 256;
const KEYFRAME_BYTES_PER_LINK = 128;
/**
 * The patches a chain may add up to before a new keyframe, at the least: a small snapshot's
 * chain is not cut every few steps (reading one back parses at most this much more).
 */
const CHAIN_BYTES = 16 * 1024;

/** What a run's chain is at: the snapshot its last step stored, and what reading it costs. */
interface ChainEnd {
  keyframe: number;
  step: number;
  snapshot: unknown;
  /** The keyframe's JSON length, and the patches' after it: reading the chain parses both. */
  keyframeBytes: number;
  /** The keyframe's checksum, which each patch names: a patch read against another fails. */
  keyframeSum: number;
  patchBytes: number;
  links: number;
  /** What the last step was encoded as (whose number `renumber` may give later). */
  stored: StoredSnapshotText;
  /** Kept only when patches are checked (`STAGECHART_CHECK_SNAPSHOT_PATCHES`). */
  json: string | undefined;
}

/**
 * How a run's snapshots are written: each as the patch from the one before (snapshot-patch.ts),
 * about the size of what the step changed, made without serialising the snapshot; a keyframe
 * stored whole starts each chain. A new keyframe is taken when the patches since the last one
 * add up to more than its JSON or 16 KiB (so a read parses at most about twice a snapshot's
 * bytes, or 16 KiB more), after `LONGEST_CHAIN` links (more for a large keyframe), and for a run met for the first time here (another process's, a resumed
 * one), since its last snapshot's object is not at hand. The chain's end moves as a step is
 * encoded: a step that is then not stored (its transaction failed) must `forget` the run.
 */
export class SnapshotChains {
  private readonly ends = new Map<string, ChainEnd>();
  private readonly checked = process.env.STAGECHART_CHECK_SNAPSHOT_PATCHES === "1";

  /** What `step` of `runId` stores for `snapshot`. */
  encode(runId: string, step: number, snapshot: unknown): StoredSnapshotText {
    const end = this.ends.get(runId);
    if (end && end.links < Math.max(LONGEST_CHAIN, end.keyframeBytes / KEYFRAME_BYTES_PER_LINK)) {
      const ops = diffSnapshots(end.snapshot, snapshot);
      const text = JSON.stringify([end.step, end.keyframeSum, ...packPatch(ops)]);
      if (end.patchBytes + text.length <= Math.max(end.keyframeBytes, CHAIN_BYTES)) {
        if (end.json !== undefined) this.check(end.json, text, snapshot);
        const stored = { snapshot: text, base: end.keyframe };
        end.step = step;
        end.snapshot = snapshot;
        end.patchBytes += text.length;
        end.links += 1;
        end.stored = stored;
        if (this.checked) end.json = JSON.stringify(snapshot);
        return stored;
      }
    }
    const json = JSON.stringify(snapshot);
    const stored = { snapshot: json, base: null };
    this.ends.set(runId, {
      keyframe: step,
      step,
      snapshot,
      keyframeBytes: json.length,
      keyframeSum: crc32(json),
      patchBytes: 0,
      links: 0,
      stored,
      json: this.checked ? json : undefined,
    });
    return stored;
  }

  /**
   * The step `stored` (what `encode` gave) was stored as, where the store numbers steps only as
   * it commits them (PostgreSQL's does, in the database): the run's chain goes on from that step,
   * if `stored` is still its end.
   */
  renumber(runId: string, stored: StoredSnapshotText, step: number): void {
    const end = this.ends.get(runId);
    if (end?.stored !== stored) return;
    end.step = step;
    if (end.links === 0) end.keyframe = step;
  }

  /** Drops the run's chain (it ended, or its step was not stored), or every run's. */
  forget(runId?: string): void {
    if (runId === undefined) this.ends.clear();
    else this.ends.delete(runId);
  }

  /**
   * The check the test suite runs on every patch: applied to the JSON of the snapshot before,
   * it gives the snapshot's JSON, keys in the same order. A difference means an object of a snapshot was changed in
   * place after it was committed, which comparing by identity cannot see.
   */
  private check(before: string, text: string, snapshot: unknown): void {
    const [, , ...packed] = JSON.parse(text) as unknown[];
    const patched = applyPatch(JSON.parse(before), unpackPatch(packed));
    if (JSON.stringify(patched) !== JSON.stringify(snapshot))
      throw new Error(`a snapshot patch does not reproduce the snapshot: ${text.slice(0, 500)}`);
  }
}

/** One row of a snapshot's chain: its step and what it stores. */
export interface ChainRow extends StoredSnapshotText {
  step: number;
}

/**
 * The snapshot a chain of rows ends with: its keyframe (the first row, stored whole) with the
 * patches of the rows after it applied in order. A row of an earlier stagechart's zlib delta
 * reads against the keyframe alone. Throws when the chain is broken: its keyframe missing, a
 * link missing or not made against the row before it.
 */
export function snapshotOfChain(rows: readonly ChainRow[]): unknown {
  const [first, ...links] = rows;
  const last = rows.at(-1);
  if (first === undefined || last === undefined) throw new Error("no snapshot is stored");
  if (last.base !== null && typeof last.snapshot !== "string")
    return JSON.parse(inflatedDelta(last.snapshot, last.base, first));
  if (first.base !== null || typeof first.snapshot !== "string")
    throw new Error(`its keyframe (step ${last.base}) is missing`);
  let snapshot = JSON.parse(first.snapshot);
  let at = first.step;
  const sum = links.length > 0 ? crc32(first.snapshot) : 0;
  for (const row of links) {
    if (typeof row.snapshot !== "string" || row.base !== first.step) continue;
    const [after, keyframeSum, ...packed] = JSON.parse(row.snapshot) as [
      number,
      number,
      ...unknown[],
    ];
    if (keyframeSum !== sum)
      throw new Error(
        `step ${row.step}'s keyframe (step ${first.step}) is not the one it was made against`,
      );
    if (after !== at)
      throw new Error(`the patch of step ${row.step} follows step ${after}, not ${at}`);
    snapshot = applyPatch(snapshot, unpackPatch(packed));
    at = row.step;
  }
  if (at !== last.step) throw new Error(`step ${last.step}'s patch is not in its chain`);
  return snapshot;
}

/** An earlier stagechart's delta: zlib with its keyframe's JSON as the dictionary. */
function inflatedDelta(delta: Buffer, base: number, keyframe: ChainRow): string {
  if (keyframe.base !== null || keyframe.step !== base)
    throw new Error(`its keyframe (step ${base}) is missing`);
  return inflateSync(delta, {
    dictionary: Buffer.from(keyframe.snapshot),
    windowBits: 15,
  }).toString();
}
