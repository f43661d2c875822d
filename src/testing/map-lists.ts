import { generateSync } from "json-schema-faker";
import {
  DEFAULT_MAX_ITEMS,
  type MapGroup,
  type PipelineDefinition,
} from "../definitions/pipeline-types.js";
import { StagechartError } from "../errors.js";
import type { Requirement } from "./payloads.js";

/**
 * A map group's siblings are one per item of the list its fan-out stage produces, so the model
 * drives the fan-out to produce lists of representative lengths: each length is a split of the
 * stage's `ok` outcome (`ok: output.files has 2 items`), as a rule's condition on its output
 * would be. The list's items are the model's; each item's sibling then has its stage's outcomes,
 * as a static sibling has.
 */

/** The map group a stage fans out to, if it fans out to one. */
export function mapGroupAfter(pipeline: PipelineDefinition, stageId: string): MapGroup | undefined {
  const transition = pipeline.next[stageId];
  return transition?.kind === "map" ? transition : undefined;
}

/**
 * The longest list a policy's or cap's edge is modelled with: each item is a step of every path
 * through the group, and a stage execution a test runs.
 */
export const MOST_MODELLED_ITEMS = 8;

/**
 * The list lengths a map group is modelled with: none, one and two items; for `{ quorum: k }`,
 * k - 1 (too short to meet it), k and k + 1 (one item may fail); with `maxConcurrency` m, m + 1
 * (an item waits for a free slot) — these up to `MOST_MODELLED_ITEMS`; with `maxItems` declared,
 * one item too many (the run fails with `Validation/MapTooManyItems`). Beyond the declared
 * `maxItems`, no length.
 */
export function listLengths(group: MapGroup): number[] {
  const lengths = new Set([0, 1, 2]);
  const edges = [];
  if (group.policy.kind === "quorum") {
    const { k } = group.policy;
    edges.push(k - 1, k, k + 1);
  }
  if (group.maxConcurrency !== undefined) edges.push(group.maxConcurrency + 1);
  for (const n of edges) if (n <= MOST_MODELLED_ITEMS) lengths.add(n);
  const max = group.maxItems ?? DEFAULT_MAX_ITEMS;
  const within = [...lengths].filter((n) => n >= 0 && n <= max);
  if (group.maxItems !== undefined) within.push(group.maxItems + 1);
  return [...new Set(within)].sort((a, b) => a - b);
}

/**
 * The splits of a map fan-out's `ok` outcome, one per list length: each a requirement that the
 * list at `over` be that many items (sampled from `items`, the list's item schema, when the
 * stage declares one). None when the stage is no map fan-out, or its list is in ctx (the run's
 * ctx decides it, and a path runs with the ctx it was listed with).
 */
export function listRows(
  pipeline: PipelineDefinition,
  stageId: string,
  items?: unknown,
): Requirement[][] | undefined {
  const group = mapGroupAfter(pipeline, stageId);
  if (!group || group.over.startsWith("ctx.")) return undefined;
  return listLengths(group).map((length) => [
    {
      condition: { path: group.over, op: "equals", value: listOf(length, items) },
      holds: true,
      items: length,
    },
  ]);
}

/** The item schema of the list at `over` in a stage's payload schema (`output.files`: `files`). */
export function itemSchemaAt(schema: unknown, over: string): unknown {
  let current: unknown = schema;
  for (const segment of over.split(".").slice(1)) {
    const properties = isObject(current) ? current.properties : undefined;
    current = isObject(properties) ? properties[segment] : undefined;
  }
  return isObject(current) ? current.items : undefined;
}

/**
 * `length` items: sampled (seeded by position, so the list is the same each time) from `items`;
 * a list one item longer than a large `maxItems` repeats the first `MOST_MODELLED_ITEMS`.
 */
function listOf(length: number, items: unknown): unknown[] {
  const distinct = Array.from({ length: Math.min(length, MOST_MODELLED_ITEMS) }, (_, index) =>
    isObject(items) ? generateSync(items as never, { seed: 1 + index }) : `item-${index}`,
  );
  return Array.from({ length }, (_, index) => distinct[index % MOST_MODELLED_ITEMS]);
}

/**
 * Refuses a pipeline (or a sub-pipeline in it) with a map group the model cannot drive a list
 * for (`Validation/MapNotModelled`): a sub-pipeline fan-out's list is what its own run hands on,
 * and a code, command or ask stage has no `parsed` payload to put one in.
 */
export function refuseUnmodelledMaps(pipeline: PipelineDefinition): void {
  for (const [from, transition] of Object.entries(pipeline.next)) {
    if (transition.kind !== "map" || transition.over.startsWith("ctx.")) continue;
    const kind = pipeline.stages[from]?.kind;
    const why =
      kind === "pipeline"
        ? `${from} is a sub-pipeline stage, whose list its own run decides`
        : kind !== "llm" && transition.over.startsWith("parsed.")
          ? `${from} is a ${kind} stage, which has no parsed payload`
          : undefined;
    if (why !== undefined)
      throw new StagechartError(
        "Validation/MapNotModelled",
        `pipeline ${pipeline.id} maps ${transition.stage} over ${transition.over} after ${from}, and the model cannot produce that list: ${why}`,
        { pipelineId: pipeline.id, stageId: from },
      );
  }
  for (const stage of Object.values(pipeline.stages))
    if (stage.kind === "pipeline") refuseUnmodelledMaps(stage.pipeline);
}

/**
 * The goal a step meets when it is a map fan-out producing a list of some length (its outcome
 * names it: `ok: output.files has 2 items`): a list of paths covering the transitions has a path
 * for each such length, though the transitions after them are the same.
 */
export function listGoal(
  pipeline: PipelineDefinition,
  step: { from: string; outcome: string },
): string | undefined {
  const group = mapGroupAfter(pipeline, step.from);
  return group && step.outcome.includes(`${group.over} has `)
    ? `list: ${step.from} ${step.outcome}`
    : undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
