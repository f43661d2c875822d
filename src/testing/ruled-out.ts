import type { ExitInput } from "../compiler/stage-services-port.js";
import type { JsonValue, StageResult } from "../definitions/contract.js";
import type { PipelineDefinition, PipelineStage } from "../definitions/pipeline-types.js";
import { defaultExit } from "../runtime/stage-hooks.js";
import { stageOutcomes } from "./outcomes.js";
import { describeRequirement, payloadFor, type Requirement } from "./payloads.js";
import {
  ANY_OBJECT,
  computesOutput,
  isOutputCondition,
  MAX_SPLIT_CONDITIONS,
  payloadConditions,
  truthTable,
} from "./splits.js";

/** A split of a stage's rules that its schema rules out, and the result it would hand on were it allowed. */
export interface RuledOut {
  /** The outcome's name, as `stageOutcomes` lists it among the unsatisfiable ones. */
  name: string;
  /** Why no payload the schema accepts reaches it. */
  reason: string;
  result: StageResult;
}

/**
 * For each outcome of a stage that is unsatisfiable under its schema (`stageOutcomes`), the
 * result the stage would hand on if its schema allowed it: a payload (and output) made for the
 * split's conditions with the schema set aside. Stepping the model with it shows which
 * transition only that outcome could take.
 */
export function ruledOutResults(pipeline: PipelineDefinition, stageId: string): RuledOut[] {
  const { unsatisfiable } = stageOutcomes(pipeline, stageId);
  const stage = pipeline.stages[stageId];
  if (unsatisfiable.length === 0 || !stage) return [];
  const onOutputOnly = stage.kind === "code" || stage.kind === "command";
  const conditions = payloadConditions(pipeline, stageId)
    .filter((c) => !onOutputOnly || isOutputCondition(c))
    .slice(0, MAX_SPLIT_CONDITIONS);
  return truthTable(conditions).flatMap((requirements) => {
    const name = splitName(stage, requirements);
    const ruled = unsatisfiable.find((u) => u.name === name);
    const result = ruled && unconstrainedResult(pipeline, stage, requirements);
    return ruled && result ? [{ name, reason: ruled.reason, result }] : [];
  });
}

/** The name `stageOutcomes` gives the split: `ok: output.kind in ["spam"]`, `answered: …`. */
function splitName(stage: PipelineStage, requirements: readonly Requirement[]): string {
  const described = requirements.map(describeRequirement).join(", ");
  if (stage.kind === "ask") return ["answered", described].filter(Boolean).join(": ");
  if (stage.kind === "llm") return ["ok", described].filter(Boolean).join(": ");
  return `ok: ${described}`;
}

/** The `ok` result of a split, its payload and output made with no schema but an object's. */
function unconstrainedResult(
  pipeline: PipelineDefinition,
  stage: PipelineStage,
  requirements: readonly Requirement[],
): StageResult | undefined {
  const base = { stageId: stage.id, stageExecutionId: `${stage.id}/1`, verdict: "ok" as const };
  const done = { ...base, capHit: false, attemptCount: 1 };
  if (stage.kind !== "llm") {
    const output = payloadFor(ANY_OBJECT, requirements);
    return output.ok ? { ...done, output: output.value as JsonValue } : undefined;
  }
  if (computesOutput(pipeline, stage.id)) {
    const parsed = payloadFor(
      ANY_OBJECT,
      requirements.filter((r) => !isOutputCondition(r.condition)),
    );
    const output = payloadFor(
      ANY_OBJECT,
      requirements.filter((r) => isOutputCondition(r.condition)),
    );
    if (!parsed.ok || !output.ok) return undefined;
    return { ...done, parsed: parsed.value as never, output: output.value as JsonValue };
  }
  const handOn = (payload: Record<string, unknown>) =>
    defaultExit({ parsed: payload, outputFields: stage.outputFields } as ExitInput);
  const parsed = payloadFor(ANY_OBJECT, requirements, 1, handOn);
  if (!parsed.ok) return undefined;
  const output = handOn(parsed.value);
  return {
    ...done,
    parsed: parsed.value as never,
    ...(output !== undefined && { output }),
  };
}
