import type { CompletionCheckInput, JsonValue, StageHooks } from "../contract.js";
import { isRecord } from "../contract.js";
import type { JsonSchema } from "../json-schema.js";

/**
 * The `workflow_step` completion tool every phase ends through:
 * `next` advances, `loop` restarts the innermost workflow, `cancel` ends the whole run once
 * confirmed. `status` is not an action here: the stage's prompt already says where it is.
 */
export const STEP_TOOL = "workflow_step";
export const STEP_ACTIONS = ["next", "loop", "cancel"] as const;
export type StepAction = (typeof STEP_ACTIONS)[number];

export const STEP_SCHEMA: JsonSchema = {
  type: "object",
  required: ["action"],
  additionalProperties: false,
  properties: {
    action: { enum: [...STEP_ACTIONS] },
    summary: { type: "string", description: "what this phase did, for the phases after it" },
  },
};

/** Where a phase stage keeps what its refusals need: its stage file's `piWorkflow` field. */
export interface PhaseFacts {
  workflow: string;
  loopable: boolean;
}
export const PHASE_FACTS_FIELD = "piWorkflow";

export const LOOP_REFUSED =
  "Looping is disabled for this workflow. Call workflow_step with action next to go on, or cancel to stop.";
export const CANCEL_PENDING =
  "Cancelling ends the whole workflow. To confirm, call workflow_step with action cancel again; to go on instead, call it with next.";

/**
 * The refusals of `workflow_step`, as completion rejections the model reads as the call's
 * result: `loop` in a workflow with `loopable: false`, and a first `cancel` — a cancel takes
 * effect only when the workflow_step call just before it, in the same stage execution, was a
 * cancel this refused (so a pending cancel expires with any other step, unlike upstream).
 */
export const stepHooks: StageHooks = {
  refuseCompletion: ({ stage, parsed, transcript }: CompletionCheckInput) => {
    const action = actionOf(parsed);
    const facts = stage.extensions[PHASE_FACTS_FIELD] as PhaseFacts | undefined;
    if (action === "loop" && facts?.loopable === false) return LOOP_REFUSED;
    if (action === "cancel" && !cancelPending(transcript)) return CANCEL_PENDING;
    return undefined;
  },
};

const actionOf = (payload: JsonValue | undefined): unknown =>
  isRecord(payload) ? payload.action : undefined;

function cancelPending(transcript: CompletionCheckInput["transcript"]): boolean {
  const lastStep = transcript.findLast(
    (entry) => entry.role === "tool" && entry.tool === STEP_TOOL,
  );
  if (lastStep?.role !== "tool" || !isRecord(lastStep.result)) return false;
  return lastStep.result.message === CANCEL_PENDING;
}
