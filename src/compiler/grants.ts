import { err, ok, type Result, StagechartError } from "../errors.js";
import type { ProposedCall } from "./stage-types.js";

/**
 * One-shot grant tokens of a stage execution, keyed by proposal. A token covers exactly the
 * proposal it was minted for (tool and argument digest) and is consumed by one execution.
 * The ledger lives in the stage's context, so it dies with the stage execution.
 */
export type GrantLedger = Readonly<
  Record<string, { tool: string; argsDigest: string; state: "issued" | "consumed" }>
>;

export function mintGrant(ledger: GrantLedger, call: ProposedCall): GrantLedger {
  return {
    ...ledger,
    [call.proposalId]: { tool: call.tool, argsDigest: call.argsDigest, state: "issued" },
  };
}

export function consumeGrant(ledger: GrantLedger, call: ProposedCall): Result<GrantLedger> {
  const token = ledger[call.proposalId];
  const context = { proposalId: call.proposalId, tool: call.tool };
  if (!token) {
    return err(
      new StagechartError(
        "Validation/GrantNotFound",
        `no grant for proposal ${call.proposalId}`,
        context,
      ),
    );
  }
  if (token.state === "consumed") {
    return err(
      new StagechartError(
        "Validation/GrantAlreadyConsumed",
        `the grant for proposal ${call.proposalId} was already used; grants are one-shot`,
        context,
      ),
    );
  }
  if (token.tool !== call.tool || token.argsDigest !== call.argsDigest) {
    return err(
      new StagechartError(
        "Validation/GrantMismatch",
        `the grant for proposal ${call.proposalId} covers other arguments`,
        context,
      ),
    );
  }
  return ok({ ...ledger, [call.proposalId]: { ...token, state: "consumed" } });
}
