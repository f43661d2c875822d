import type { AssertInput, ExitInput } from "../compiler/stage-services-port.js";
import type {
  AssertHookInput,
  AssertOutcome,
  JsonValue,
  StageHooks,
} from "../definitions/contract.js";
import { isRecord } from "../definitions/contract.js";
import type { TranscriptStore } from "./transcripts.js";

/** Assert when a stage has no hook: a cap hit asks for a retry, anything else passes. */
export function defaultAssert({ capHit, stage }: AssertInput): AssertOutcome {
  return capHit
    ? {
        verdict: "retry",
        reason: `no valid ${stage.completionTool} call within ${stage.turnCap} turns`,
      }
    : { verdict: "ok" };
}

/** Exit when a stage has no hook: the payload's listed fields (those it has), or all of it. */
export function defaultExit({ parsed, outputFields }: ExitInput): JsonValue | undefined {
  if (outputFields === undefined) return parsed;
  if (!isRecord(parsed)) return undefined;
  const handedOn: Record<string, JsonValue> = {};
  for (const field of outputFields) {
    const value = parsed[field];
    if (value !== undefined) handedOn[field] = value;
  }
  return handedOn;
}

/** Runs the stage's Assert hook, or the default one. */
export async function runAssert(
  hooks: StageHooks | undefined,
  transcripts: TranscriptStore,
  input: AssertInput,
  root: string,
): Promise<AssertOutcome> {
  if (!hooks?.assert) return defaultAssert(input);
  return hooks.assert(hookInput(transcripts, input, root));
}

/** Runs the stage's Exit hook, or the default one. */
export async function runExit(
  hooks: StageHooks | undefined,
  transcripts: TranscriptStore,
  input: ExitInput,
  root: string,
): Promise<JsonValue | undefined> {
  if (!hooks?.exit) return defaultExit(input);
  const { verdict, reason } = input;
  return hooks.exit({
    ...hookInput(transcripts, input, root),
    verdict,
    ...(reason !== undefined && { reason }),
  });
}

/** What a hook sees (`{parsed, transcript, attempts}`); the transcript is read once, here. */
function hookInput(
  transcripts: TranscriptStore,
  input: AssertInput,
  root: string,
): AssertHookInput {
  const { stage, stageContext, capHit, attempt } = input;
  // Copies: what a hook does to them must not reach the stage machine's context.
  const { parsed, attempts } = structuredClone({ parsed: input.parsed, attempts: input.attempts });
  return {
    stage,
    ctx: Object.freeze({ ...stageContext, attempts }),
    ...(parsed !== undefined && { parsed }),
    transcript: transcripts.read(stageContext.stageExecutionId),
    attempts,
    capHit,
    attempt,
    root,
  };
}
