import type { SqliteStore, StepCommit } from "../src/index.js";

export interface StoreMeter {
  /** The store to run on: every write goes through to `store`, counted on the way. */
  store: SqliteStore;
  /** JSON bytes handed to the store, by kind; a snapshot counts each time it is rewritten. */
  bytes: { snapshots: number; audit: number; journal: number; transcripts: number };
  /** Size of each committed snapshot, in commit order. */
  snapshotSizes: number[];
  /** Step commits (snapshot, audit events, journal and transcript entries in one transaction). */
  commits: number;
}

const size = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/** Wraps a store so that what it is asked to write is measured. */
export function meter(store: SqliteStore, onCommit?: () => void): StoreMeter {
  const meter: StoreMeter = {
    store,
    bytes: { snapshots: 0, audit: 0, journal: 0, transcripts: 0 },
    snapshotSizes: [],
    commits: 0,
  };
  meter.store = Object.assign(Object.create(store) as SqliteStore, {
    commitStep(runId: string, step: StepCommit) {
      if (step.snapshot !== undefined) {
        const snapshotBytes = size(step.snapshot);
        meter.snapshotSizes.push(snapshotBytes);
        meter.bytes.snapshots += snapshotBytes;
      }
      meter.bytes.audit += step.events.reduce((sum, event) => sum + size(event), 0);
      meter.bytes.journal += (step.journal ?? []).reduce((sum, { value }) => sum + size(value), 0);
      meter.bytes.transcripts += (step.transcripts ?? []).reduce(
        (sum, { entry }) => sum + size(entry),
        0,
      );
      meter.commits += 1;
      const recorded = store.commitStep(runId, step);
      onCommit?.();
      return recorded;
    },
  });
  return meter;
}

export const totalBytes = (meter: StoreMeter): number =>
  Object.values(meter.bytes).reduce((sum, bytes) => sum + bytes, 0);
