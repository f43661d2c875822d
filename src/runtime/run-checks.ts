import type { PipelineContext, PipelineEvent } from "../compiler/pipeline-context.js";
import { stageOfState } from "../compiler/pipeline-states.js";
import { lookup } from "../compiler/stage-table.js";
import { overrideTargets, reachableStages, redoTargets } from "../compiler/topology.js";
import { compileSchema, describeSchemaErrors } from "../definitions/json-schema.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { CORE_CTX_FIELDS } from "../definitions/template.js";
import { StagechartError } from "../errors.js";

/** What a run refuses before anything happens: reserved fields, a ctx its schema rejects. */
export function checkContext(
  pipeline: PipelineDefinition,
  ctx: Record<string, unknown>,
): StagechartError | undefined {
  const reserved = [...CORE_CTX_FIELDS].filter((field) => Object.hasOwn(ctx, field));
  if (reserved.length > 0)
    return new StagechartError(
      "Validation/RunContextInvalid",
      `ctx.${reserved.join(", ctx.")} ${reserved.length > 1 ? "are" : "is"} set by the engine for every stage; a run cannot set ${reserved.length > 1 ? "them" : "it"}`,
      { reserved },
    );
  const validate = compileSchema(pipeline.context);
  if (!validate.ok)
    return new StagechartError(
      "Validation/PipelineContextInvalid",
      `the context schema of ${pipeline.id} does not compile`,
    );
  if (validate.value(ctx)) return undefined;
  const errors = describeSchemaErrors(validate.value.errors);
  return new StagechartError(
    "Validation/RunContextInvalid",
    `ctx does not match ${pipeline.id}'s context schema: ${errors.join("; ")}`,
    {
      errors,
    },
  );
}

/** Why a control event is refused, or nothing when it may be sent. */
export function refuseControl(
  pipeline: PipelineDefinition,
  context: PipelineContext,
  event: PipelineEvent,
): StagechartError | undefined {
  if (event.type === "CANCEL") return undefined;
  const from = context.current && stageOfState(context.current);
  if (!from) return new StagechartError("Session/IllegalTransition", "the run is not in a stage");
  if (event.type === "OVERRIDE") {
    if (!event.reason?.trim())
      return new StagechartError(
        "Validation/OverrideReasonMissing",
        "an override needs a reason; it is audited",
      );
    const reachable = overrideTargets(pipeline, from);
    if (!reachable.includes(event.to)) {
      const why =
        pipeline.override === "adjacent"
          ? `no rule of ${from} leads there, and ${pipeline.id} overrides only to such a stage (override: adjacent)`
          : reachableStages(pipeline, from).includes(event.to)
            ? `${event.to} is entered only by a fan-out, as a parallel sibling or as the join of a group whose siblings all succeeded`
            : "the pipeline's transitions do not lead there";
      return new StagechartError(
        "Session/IllegalTransition",
        `cannot override from ${from} to ${event.to}: ${why}`,
        { from, to: event.to, reachable },
      );
    }
    return undefined;
  }
  return refuseRedo(pipeline, from, lookup(context.visits, event.stage) ?? 0, event.stage);
}

/** Why `stage` cannot be run again from stage `from`, or nothing when it can. */
function refuseRedo(
  pipeline: PipelineDefinition,
  from: string,
  visits: number,
  stage: string,
): StagechartError | undefined {
  const refused = (why: string) =>
    new StagechartError("Session/IllegalTransition", `cannot redo ${stage}: ${why}`, { stage });
  if (!visits) return refused("it has not run yet");
  if (!redoTargets(pipeline, from).includes(stage))
    return refused(
      pipeline.override === "adjacent"
        ? `from ${from} a redo re-runs ${from} or a stage one of its rules leads to (override: adjacent)`
        : `no run comes to ${from} through it`,
    );
  return undefined;
}
