import type { AssertOutcome, GateAnswer, StageContext } from "../compiler/stage-types.js";
import type { StageDefinition } from "../definitions/stage.js";

/**
 * Code a pipeline attaches to an LLM stage: a CheckGate run before Act, and an Assert run
 * after it. Without them the gate always proceeds and Assert is `capHit ? retry : ok`.
 */
export interface StageHooks {
  gate?(input: { stage: StageDefinition; ctx: StageContext }): GateAnswer | Promise<GateAnswer>;
  assert?(input: AssertHookInput): AssertOutcome | Promise<AssertOutcome>;
}

export interface AssertHookInput {
  stage: StageDefinition;
  ctx: StageContext;
  /** The completion payload that passed the schema, when Act ended with one. */
  parsed?: unknown;
  capHit: boolean;
  attempt: number;
}

export function defaultAssert({ capHit, stage }: AssertHookInput): AssertOutcome {
  return capHit
    ? {
        verdict: "retry",
        reason: `no valid ${stage.completionTool} call within ${stage.turnCap} turns`,
      }
    : { verdict: "ok" };
}
