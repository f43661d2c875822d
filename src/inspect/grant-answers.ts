import { err, ok, type Result, StagechartError } from "../errors.js";
import type { ApiContext } from "./api-context.js";
import { describeStoredRun } from "./run-view.js";

/**
 * An answer to a grant request: given to the live run that asks, or to the suspended run that
 * waits for it by a resume (through `RunControl`); one nobody waits for is `Session/NoPendingGrant`.
 */
export async function answerGrant(
  context: ApiContext,
  runId: string,
  proposalId: string,
  decision: "approve" | "deny",
): Promise<Result<unknown>> {
  if (context.live.answer(runId, proposalId, decision)) return ok({ answered: "live" });
  const store = await context.store();
  const run = store ? await describeStoredRun(store, runId) : undefined;
  const waits =
    run?.ok && run.value.waiting?.some((w) => w.kind === "grant" && w.proposalId === proposalId);
  const control = waits && context.resumesRuns ? await context.control() : undefined;
  if (!control)
    return err(
      new StagechartError(
        "Session/NoPendingGrant",
        `run ${runId} has no grant request ${proposalId} waiting`,
        { runId, proposalId },
      ),
    );
  void control.approve(runId, proposalId, decision).catch(() => undefined);
  return ok({ answered: "resumed" });
}
