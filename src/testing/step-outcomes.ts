import type { InspectionEvent } from "xstate";
import { EMPTY_TABLE, entriesOf, type StageTable } from "../compiler/stage-table.js";
import type { StageResult } from "../definitions/contract.js";
import { executionKey } from "./drive.js";
import type { StageOutcome } from "./outcomes.js";
import type { PathStep } from "./paths.js";

/**
 * Records the result of each stage execution of the run's own pipeline as it records it (its
 * `context.results`), by `<stage>@<visit>`: a sibling of an `all-settled` group too, whose
 * verdict changes no transition.
 */
export function resultRecorder(results: Map<string, StageResult>) {
  return (event: InspectionEvent) => {
    if (event.type !== "@xstate.snapshot" || event.actorRef.sessionId !== event.rootId) return;
    const { context } = event.snapshot as { context?: { results?: StageTable<StageResult> } };
    for (const [, result] of entriesOf(context?.results ?? EMPTY_TABLE))
      results.set(executionKey(result.stageExecutionId), result);
  };
}

/** A step whose stage execution did not end as the step says: its index, and what it did. */
export interface StepMismatch {
  step: number;
  reason: string;
}

/**
 * The first step whose stage execution ended otherwise than the outcome the step names — its
 * verdict, or whether it ran out of turns — saying what it did; a step that suspends the run, or
 * sends a control event, ends no execution. With `unended`, the first step whose execution
 * recorded no result at all.
 */
export function stepMismatch(
  steps: readonly PathStep[],
  outcomeOf: (step: PathStep) => StageOutcome | undefined,
  /** The visit of its stage each step is. */
  visitOf: (index: number) => number,
  results: ReadonlyMap<string, StageResult>,
  unended = false,
): StepMismatch | undefined {
  for (const [index, step] of steps.entries()) {
    const outcome = outcomeOf(step);
    if (!outcome || outcome.suspends) continue;
    const result = results.get(`${step.stage}@${visitOf(index)}`);
    const where = `step ${index + 1} (${step.stage}: ${step.outcome})`;
    if (!result) {
      if (unended) return { step: index, reason: `${where}: ${step.stage} never ended` };
      continue;
    }
    if (result.verdict !== outcome.verdict || result.capHit !== outcome.capHit)
      return {
        step: index,
        reason: `${where}: ${step.stage} ended ${describeResult(result)}, not ${step.outcome}`,
      };
  }
  return undefined;
}

function describeResult({ verdict, capHit, reason }: StageResult): string {
  return `${verdict}${capHit ? " out of turns" : ""}${reason ? ` (${reason})` : ""}`;
}
