import type { PipelineEvent } from "../compiler/pipeline-context.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { requestControl } from "../runtime/control.js";
import type { RunStore } from "../runtime/store-port.js";
import * as z from "../zod.js";

const controlBody = z.discriminatedUnion("type", [
  z.object({ type: z.literal("CANCEL"), reason: z.optional(z.string()) }),
  z.object({
    type: z.literal("OVERRIDE"),
    to: z.string().check(z.minLength(1)),
    reason: z.string().check(z.minLength(1)),
  }),
  z.object({ type: z.literal("REDO"), stage: z.string().check(z.minLength(1)) }),
]);

/**
 * `POST /api/runs/<runId>/control`: a control event for a live run, handed to the process that
 * owns it through the store's control queue, as `stagechart cancel|override|redo` does; the
 * reply is the settled request, or the owner's refusal. Audited as asked by the visualizer.
 */
export async function controlFromPage(
  store: RunStore,
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
  const settled = await requestControl(store, runId, event, { by: "visualizer" });
  if (!settled.ok) return settled;
  return ok({ runId, control: event.type, outcome: "applied", requestId: settled.value.id });
}
