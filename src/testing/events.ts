import type { PipelineEvent } from "../compiler/pipeline-context.js";
import { overrideTargets, redoTargets } from "../compiler/topology.js";
import type { StageResult } from "../definitions/contract.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";

/**
 * The event a compiled pipeline receives when the child actor of stage `stageId` ends with
 * `result`. Send it (or give it to `xstate/graph`'s traversals) to move a pipeline machine on
 * without running the stage: the stage's state invokes its child under the stage's id.
 */
export function stageDone(stageId: string, result: StageResult) {
  return { type: `xstate.done.actor.${stageId}`, output: result, actorId: stageId } as const;
}

export type StageDoneEvent = ReturnType<typeof stageDone>;

export type ControlEventName = "override" | "redo" | "cancel";

/** The control events a test may send from stage `stageId`: OVERRIDE to each reachable rule target, REDO of each stage run before it, CANCEL. */
export function controlEventsFrom(
  pipeline: PipelineDefinition,
  stageId: string,
  names: readonly ControlEventName[],
) {
  const events = [];
  if (names.includes("override"))
    for (const to of overrideTargets(pipeline, stageId))
      events.push({ type: "OVERRIDE" as const, to, reason: "model-based test" });
  if (names.includes("redo"))
    for (const stage of redoTargets(pipeline, stageId))
      events.push({ type: "REDO" as const, stage });
  if (names.includes("cancel")) events.push({ type: "CANCEL" as const });
  return events;
}

/** The control event a path step names (`OVERRIDE execute`, `REDO plan`, `CANCEL`), if it names one. */
export function controlEventOf(outcome: string): PipelineEvent | undefined {
  const [type, target] = outcome.split(" ");
  if (type === "CANCEL" && target === undefined) return { type: "CANCEL" };
  if (target === undefined) return undefined;
  if (type === "OVERRIDE") return { type: "OVERRIDE", to: target, reason: "model-based test" };
  if (type === "REDO") return { type: "REDO", stage: target };
  return undefined;
}
