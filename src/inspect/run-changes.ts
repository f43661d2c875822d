import type { RunSummary } from "../runtime/run-records.js";
import type { RunStore } from "../runtime/store-port.js";

/** What a look at the store found: the runs that changed since the look before. */
export interface RunChanges {
  /** The store the look read, for more of a run than its summary. */
  store: RunStore;
  /** The runs whose status or last update changed; at the first look, the newest runs. */
  runs: RunSummary[];
  /** The first look: its runs are the store as the watch found it, not news. */
  first: boolean;
}

/** Told of each look at the store that found runs changed; the next look waits for it. */
export type RunChangeListener = (changes: RunChanges) => Promise<void> | void;
