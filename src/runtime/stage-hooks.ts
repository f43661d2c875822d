import type { AssertHookInput, AssertOutcome } from "../definitions/contract.js";

/** Assert when a stage has no hook: a cap hit asks for a retry, anything else passes. */
export function defaultAssert({ capHit, stage }: AssertHookInput): AssertOutcome {
  return capHit
    ? {
        verdict: "retry",
        reason: `no valid ${stage.completionTool} call within ${stage.turnCap} turns`,
      }
    : { verdict: "ok" };
}
