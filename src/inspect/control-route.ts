import type { PipelineEvent } from "../compiler/pipeline-context.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { RunControl } from "../runtime/run-control.js";
import * as z from "../zod.js";

/** A control event's body: cancel, override or redo. */
export const controlBody = z.discriminatedUnion("type", [
  z.object({ type: z.literal("CANCEL"), reason: z.optional(z.string()) }),
  z.object({
    type: z.literal("OVERRIDE"),
    to: z.string().check(z.minLength(1)),
    reason: z.string().check(z.minLength(1)),
  }),
  z.object({ type: z.literal("REDO"), stage: z.string().check(z.minLength(1)) }),
]);

/**
 * `POST /api/runs/<runId>/control`: a control event for a run, through the one control path
 * (`RunControl`) as `stagechart cancel|override|redo` does: a queued run is cancelled in place, a
 * live run's owner is asked through the store, a run nobody owns is resumed with it where the
 * server resumes runs. The reply is how it was carried out (`outcome`: applied, cancelled or
 * resumed), or the refusal. Audited as asked by the visualizer.
 */
export async function controlFromPage(
  control: RunControl,
  runId: string,
  body: unknown,
): Promise<Result<unknown>> {
  const parsed = controlBody.safeParse(body);
  if (!parsed.success)
    return err(
      new StagechartError(
        "Validation/ControlEventInvalid",
        "a control is {type: CANCEL, reason?}, {type: OVERRIDE, to, reason} or {type: REDO, stage}",
        { issues: parsed.error.issues.map((issue) => issue.message) },
      ),
    );
  const event: PipelineEvent =
    parsed.data.type === "CANCEL"
      ? { type: "CANCEL", reason: parsed.data.reason ?? "cancelled from the visualizer" }
      : parsed.data;
  const done = await control.send(runId, event);
  if (!done.ok) return done;
  const carried = { runId, control: event.type, outcome: done.value.outcome };
  return ok(
    done.value.outcome === "applied" ? { ...carried, requestId: done.value.requestId } : carried,
  );
}
