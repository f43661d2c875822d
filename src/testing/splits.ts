import type { Condition, PipelineDefinition } from "../definitions/pipeline-types.js";
import { itemSchemaAt, listRows, mapGroupAfter } from "./map-lists.js";
import type { PayloadCondition, Requirement } from "./payloads.js";

/** At most this many payload conditions of one stage are split into every true/false combination. */
export const MAX_SPLIT_CONDITIONS = 6;

export { ANY_OBJECT } from "./payloads.js";

/**
 * Whether what a stage hands on is computed by code the model does not run (a code or command
 * stage's, or an LLM stage's exit hook) and its rules read it: then each `output` split is
 * any object that makes it hold, and the drive fits what that code hands on to the split (see
 * `StandIn`), or hands on that object where the code cannot end `ok`.
 */
export function computesOutput(pipeline: PipelineDefinition, stageId: string): boolean {
  const kind = pipeline.stages[stageId]?.kind;
  const computed =
    kind === "code" || kind === "command" || (kind === "llm" && !!pipeline.hooks[stageId]?.exit);
  const mapsOverOutput = mapGroupAfter(pipeline, stageId)?.over.startsWith("output.") === true;
  return (
    computed && (mapsOverOutput || payloadConditions(pipeline, stageId).some(isOutputCondition))
  );
}

export const isOutputCondition = (condition: PayloadCondition) =>
  condition.path.startsWith("output.");

/** The payload conditions (`output.*`, `parsed.*`) of a stage's rules, each once, in rule order. */
export function payloadConditions(
  pipeline: PipelineDefinition,
  stageId: string,
): PayloadCondition[] {
  const transition = pipeline.next[stageId];
  if (transition?.kind !== "rules") return [];
  const found = new Map<string, PayloadCondition>();
  const visit = (condition: Condition): void => {
    if ("all" in condition) condition.all.forEach(visit);
    else if ("any" in condition) condition.any.forEach(visit);
    else if ("not" in condition) visit(condition.not);
    else if ("path" in condition && /^(output|parsed)\./.test(condition.path))
      found.set(JSON.stringify(condition), condition);
  };
  for (const rule of transition.rules) if (rule.when) visit(rule.when);
  return [...found.values()];
}

/**
 * The splits of a stage's `ok` outcome: a map fan-out's list lengths (see `listRows`; `schema`,
 * the payload's, gives the list's items), or every combination of its rules' payload conditions.
 */
export function splitsOf(
  pipeline: PipelineDefinition,
  stageId: string,
  conditions: readonly PayloadCondition[],
  schema?: unknown,
): Requirement[][] {
  const group = mapGroupAfter(pipeline, stageId);
  const lists = group && listRows(pipeline, stageId, itemSchemaAt(schema, group.over));
  return lists ?? truthTable(conditions);
}

/** Every combination of the conditions holding or not: 2^n rows, one empty row for none. */
export function truthTable(conditions: readonly PayloadCondition[]): Requirement[][] {
  return conditions.reduce<Requirement[][]>(
    (rows, condition) =>
      rows.flatMap((row) => [
        [...row, { condition, holds: true }],
        [...row, { condition, holds: false }],
      ]),
    [[]],
  );
}
