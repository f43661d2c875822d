import type { JsonValue } from "../definitions/contract.js";
import type { InputRequest } from "./ask-stage.js";
import type { GrantDecision, GrantRequest } from "./stage-types.js";

/**
 * Somebody who can answer grant requests, ask stages' questions, or both: the terminal, the
 * visualizer, a callback. Each is asked only what it has a method for.
 */
export interface Interactor {
  readonly name: string;
  requestGrant?(request: GrantRequest, signal: AbortSignal): Promise<GrantDecision>;
  /**
   * Asks a person for an ask stage's value; `problems` says why the last answer was refused.
   * Interactors without it are not asked for values.
   */
  askValue?(
    request: InputRequest & { problems?: string[] },
    signal: AbortSignal,
  ): Promise<JsonValue>;
}
