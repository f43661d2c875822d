import type { RunControl } from "../runtime/run-control.js";
import type { RunStore } from "../runtime/store-port.js";
import type { Forker } from "./fork-route.js";
import type { LiveRegistry } from "./live.js";

/** What the visualizer's API needs besides the request. */
export interface ApiContext {
  /** The run store (either kind), or undefined while there is no store file yet. */
  store(): Promise<RunStore | undefined>;
  live: LiveRegistry;
  /**
   * How the page acts on a stored run (the one control path: a live run's owner is asked through
   * the store; a suspended run is resumed here only when the server resumes runs), or undefined
   * while there is no store.
   */
  control(): Promise<RunControl | undefined>;
  /** Whether the server resumes a suspended run the page answers (`resumeRuns`). */
  resumesRuns: boolean;
  /** How the page forks a run and starts the fork here: only where the server runs runs. */
  fork?: Forker;
}
