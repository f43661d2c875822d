import type { JsonValue } from "../definitions/contract.js";
import type { RunStore } from "../runtime/store-port.js";
import type { LiveRegistry } from "./live.js";

/** What the visualizer's API needs besides the request. */
export interface ApiContext {
  /** The run store (either kind), or undefined while there is no store file yet. */
  store(): Promise<RunStore | undefined>;
  live: LiveRegistry;
  /** Resumes a suspended run with an answer to the grant request it waits for. */
  resume?(runId: string, proposalId: string, decision: "approve" | "deny"): Promise<void>;
  /** Resumes a suspended run with an answer to the ask stage it waits on. */
  resumeInput?(runId: string, stageExecutionId: string, value: JsonValue): Promise<void>;
}
