import type { StageResult } from "../definitions/contract.js";
import { DEFAULT_MAX_ITEMS, type MapGroup } from "../definitions/pipeline-types.js";
import type { ErrorView } from "../errors.js";
import type { PipelineContext } from "./pipeline-context.js";
import { viewOf } from "./stage-entries.js";
import { lookup } from "./stage-table.js";

/**
 * A map group's list: read from its fan-out stage's result (or ctx) when the group is entered,
 * and again, by index, as each item's sibling starts, so no copy of it is kept in the context.
 * The stage's result is in the context (and in every stored snapshot) while the group runs.
 */

/** The value at `over` (`output.files`, `parsed.files`, `ctx.files`) given the fan-out's result. */
function valueAt(
  over: string,
  result: StageResult | undefined,
  ctx: Readonly<Record<string, unknown>>,
): unknown {
  const [root, ...rest] = over.split(".");
  let value: unknown =
    root === "ctx" ? ctx : root === "parsed" ? result?.parsed : (result?.output as unknown);
  for (const segment of rest) {
    if (value === null || typeof value !== "object") return undefined;
    value = Object.hasOwn(value, segment) ? (value as Record<string, unknown>)[segment] : undefined;
  }
  return value;
}

/**
 * The list a map group runs over, or why it cannot: the path holds no list
 * (`Validation/MapOverNotList`), or more items than `maxItems` (`Validation/MapTooManyItems`).
 */
export function mapList(
  from: string,
  group: MapGroup,
  result: StageResult | undefined,
  ctx: Readonly<Record<string, unknown>>,
): { items: readonly unknown[] } | { error: ErrorView } {
  const value = valueAt(group.over, result, ctx);
  if (!Array.isArray(value)) {
    const found = value === undefined ? "nothing" : value === null ? "null" : typeof value;
    return {
      error: viewOf(
        "Validation/MapOverNotList",
        `the map group after ${from} runs over ${group.over}, which holds ${found}, not a list`,
        { stageId: from, over: group.over },
      ),
    };
  }
  const maxItems = group.maxItems ?? DEFAULT_MAX_ITEMS;
  if (value.length > maxItems) {
    return {
      error: viewOf(
        "Validation/MapTooManyItems",
        `the map group after ${from} was given ${value.length} items in ${group.over}; it takes at most ${maxItems} (maxItems)`,
        { stageId: from, items: value.length, maxItems },
      ),
    };
  }
  return { items: value };
}

/** The items of a map group entered just now: its fan-out's result is recorded by then. */
export function enteredItems(
  context: PipelineContext,
  from: string,
  group: MapGroup,
): readonly unknown[] {
  const list = mapList(from, group, lookup(context.results, from), context.ctx);
  return "items" in list ? list.items : [];
}

/** What the sibling of item `index` reads in ctx: `item`, `itemIndex` and the group's `as` name. */
export function itemCtx(
  context: PipelineContext,
  from: string,
  group: MapGroup,
  index: number,
): Readonly<Record<string, unknown>> {
  const item = enteredItems(context, from, group)[index];
  return {
    ...context.ctx,
    item,
    itemIndex: index,
    ...(group.as !== undefined && { [group.as]: item }),
  };
}
