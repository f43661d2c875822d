import type { IncomingHttpHeaders } from "node:http";
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
   * while there is no store. `by` names who asks, for the audit (default: the visualizer).
   */
  control(by?: string): Promise<RunControl | undefined>;
  /** Whether the server resumes a suspended run the page answers (`resumeRuns`). */
  resumesRuns: boolean;
  /** How the page forks a run and starts the fork here: only where the server runs runs. */
  fork?: Forker;
  /** What the health route tells besides the store and forks (`serve`: how it runs runs). */
  facts?: Record<string, unknown>;
}

/** One request to the API: as it came, its body unparsed. */
export interface ApiRequest {
  method: string;
  /** The path below the API's prefix, split at `/`, each part decoded. */
  parts: string[];
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The body's text (POST, PUT, PATCH), or undefined when it is larger than the server reads. */
  text: string | undefined;
}

export interface ApiReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}
