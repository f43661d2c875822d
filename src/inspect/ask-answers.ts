import type { JsonValue } from "../definitions/contract.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { answerProblems } from "../runtime/ask-stages.js";
import type { ApiContext } from "./api-context.js";
import { describeStoredRun } from "./run-view.js";

/**
 * An answer to an ask stage: checked against the stage's schema (`Validation/InputInvalid`
 * with each problem), then sent to the live run that asks, or given to the suspended run that
 * waits for it by a resume; an answer nobody waits for is `Session/NoPendingInput`.
 */
export async function answerAsk(
  context: ApiContext,
  runId: string,
  stageExecutionId: string,
  value: unknown,
): Promise<Result<unknown>> {
  const live = context.live.asks.find(runId, stageExecutionId);
  const store = live ? undefined : await context.store();
  const run = store ? await describeStoredRun(store, runId) : undefined;
  const parked =
    run?.ok && run.value.status === "suspended"
      ? run.value.waiting?.find(
          (w) => w.kind === "input" && w.stageExecutionId === stageExecutionId,
        )
      : undefined;
  const request = live ?? (parked?.kind === "input" && context.resumesRuns ? parked : undefined);
  if (!request)
    return err(
      new StagechartError(
        "Session/NoPendingInput",
        `run ${runId} waits for no answer from ${stageExecutionId}`,
        { runId, stageExecutionId },
      ),
    );
  const problems =
    value === undefined
      ? ["an answer needs a value"]
      : answerProblems({ ...request, runId }, value);
  if (problems)
    return err(
      new StagechartError(
        "Validation/InputInvalid",
        `the answer to ${request.stageId} does not match its schema: ${problems.join("; ")}`,
        { stageId: request.stageId, problems },
      ),
    );
  if (live) {
    context.live.asks.answer(runId, stageExecutionId, value as JsonValue);
    return ok({ answered: "live" });
  }
  const control = await context.control();
  if (!control)
    return err(new StagechartError("Session/RunNotFound", `no run ${runId}`, { runId }));
  void control.answer(runId, stageExecutionId, value as JsonValue).catch(() => undefined);
  return ok({ answered: "resumed" });
}
