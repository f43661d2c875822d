import type { PipelineEvent } from "../compiler/pipeline-context.js";
import { ok, type Result } from "../errors.js";
import type { RunControl } from "../runtime/run-control.js";

/**
 * `POST /api/v1/runs/<runId>/cancel|override|redo`: a control event for a run, through the one
 * control path (`RunControl`) as `stagechart cancel|override|redo` does: a queued run is cancelled
 * in place, a live run's owner is asked through the store, a run nobody owns is resumed with it
 * where the server resumes runs. The reply is how it was carried out (`outcome`: applied,
 * cancelled or resumed), or the refusal.
 */
export async function controlRun(
  control: RunControl,
  runId: string,
  event: PipelineEvent,
): Promise<Result<unknown>> {
  const done = await control.send(runId, event);
  if (!done.ok) return done;
  const carried = { runId, control: event.type, outcome: done.value.outcome };
  return ok(
    done.value.outcome === "applied" ? { ...carried, requestId: done.value.requestId } : carried,
  );
}
