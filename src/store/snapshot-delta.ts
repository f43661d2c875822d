import { deflateSync, inflateSync } from "node:zlib";

/** A snapshot as a step row stores it: its JSON, or a delta against the step `base`'s. */
export interface StoredSnapshotText {
  snapshot: string | Buffer;
  base: number | null;
}

/** A delta larger than this share of its snapshot's JSON makes that snapshot a keyframe. */
const LARGEST_DELTA = 1 / 8;

/**
 * The step a run's snapshots are stored against (fewer bytes on disk). A run's consecutive
 * snapshots differ in a few fields, so most are stored as a zlib delta whose dictionary is the
 * run's keyframe (an earlier step's snapshot, stored whole): about 5 % of the JSON. Its checksums
 * (of the dictionary and of the JSON) make a delta read against a damaged keyframe fail. Every
 * delta names its keyframe, which is never itself a delta, so any snapshot reads back with at
 * most one inflate. Keyframes live in memory only for runs this store commits; a run met for the
 * first time (another process's, a resumed one) starts with a new keyframe.
 */
export class SnapshotKeyframes {
  private readonly keyframes = new Map<string, { step: number; dictionary: Buffer }>();

  /** What `step` of `runId` stores for the snapshot `json`; call `forget` if it is not committed. */
  encode(runId: string, step: number, json: string): StoredSnapshotText {
    const delta = this.deltaOf(runId, json);
    if (delta) return delta;
    this.keep(runId, step, json);
    return { snapshot: json, base: null };
  }

  /**
   * The snapshot `json` of `runId` as a delta against the run's keyframe, when it has one and
   * the delta is small enough; stored whole otherwise (then `keep` it once its step is known).
   */
  deltaOf(runId: string, json: string): StoredSnapshotText | undefined {
    const keyframe = this.keyframes.get(runId);
    if (!keyframe) return undefined;
    const delta = deflateSync(json, deltaOptions(keyframe.dictionary, json));
    return delta.length <= json.length * LARGEST_DELTA
      ? { snapshot: delta, base: keyframe.step }
      : undefined;
  }

  /** Makes `json`, stored whole as step `step` of `runId`, the run's keyframe. */
  keep(runId: string, step: number, json: string): void {
    this.keyframes.set(runId, { step, dictionary: Buffer.from(json) });
  }

  /** Drops the run's keyframe (it ended), or every run's (a transaction rolled back). */
  forget(runId?: string): void {
    if (runId === undefined) this.keyframes.clear();
    else this.keyframes.delete(runId);
  }
}

/**
 * Cheap to set up and run, as every commit pays it: the window just large enough for keyframe and
 * snapshot, little hash memory, zlib's fastest level (a delta about 15 % larger than at level 6).
 */
function deltaOptions(dictionary: Buffer, json: string) {
  const needed = dictionary.length + json.length;
  const windowBits = Math.min(15, Math.max(9, Math.ceil(Math.log2(needed))));
  return { dictionary, windowBits, memLevel: 4, level: 1 };
}

/**
 * The JSON a step stored: its text, or its delta inflated against its keyframe's text (`keyframe`,
 * null when that row is missing). Throws when the delta does not inflate to what was stored.
 */
export function snapshotJson(stored: StoredSnapshotText, keyframe: string | Buffer | null): string {
  if (stored.base === null) return String(stored.snapshot);
  if (typeof keyframe !== "string")
    throw new Error(`its keyframe (step ${stored.base}) is missing`);
  const delta =
    typeof stored.snapshot === "string" ? Buffer.from(stored.snapshot) : stored.snapshot;
  return inflateSync(delta, { dictionary: Buffer.from(keyframe), windowBits: 15 }).toString();
}
