import { isSiblingState, storedEntries } from "../compiler/stage-table.js";

/**
 * The page bundles this file: `isRecord` of definitions/pipeline-schema would bring zod (450 KB)
 * along with it, so it is restated here.
 */
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Where a run is, as the visualizer highlights it: the active states of its pipeline machines
 * (sub-pipelines included) and each running stage's lifecycle state. Computed the same way from
 * a stored snapshot (a replayed step) and from the live inspection stream.
 */
export interface ChartState {
  /** Full ids of every active state, and of each running sibling of a group, `pipeline.group.lint`. */
  active: string[];
  /** Per running stage: its lifecycle state (`act`, `checkGate`, …) and counters. */
  stages: Record<string, StageView>;
  /** By the full id of a map group's lane (`p.plan_parallel.review-file`): its items' counts. */
  items?: Record<string, ItemCounts>;
}

export interface ItemCounts {
  total: number;
  running: number;
  settled: number;
}

export interface StageView {
  lifecycle: string;
  stageExecutionId?: string;
  attempt?: number;
  turn?: number;
}

/** What one actor of a run looks like to the chart: its state value and its (safe) context. */
export interface ActorView {
  value?: unknown;
  context?: unknown;
  status?: string;
}

export function chartStateOf(actors: readonly ActorView[]): ChartState {
  const state: ChartState = { active: [], stages: {} };
  for (const actor of actors) {
    if (actor.status !== undefined && actor.status !== "active" && actor.status !== "done")
      continue;
    const context = (actor.context ?? {}) as Record<string, unknown>;
    const stageId = stageIdOf(context);
    if (stageId) {
      state.stages[stageId] = {
        lifecycle: topState(actor.value),
        ...pick(context, ["stageExecutionId", "attempt", "turn"]),
      };
    } else if (typeof context.pipelineId === "string" && actor.value !== undefined) {
      const siblings = siblingsOf(context.pipelineId, actor.value, context);
      state.active.push(...activeIds(context.pipelineId, actor.value), ...siblings.running);
      if (siblings.items) state.items = { ...state.items, ...siblings.items };
    }
  }
  return state;
}

/** The actors of a persisted snapshot, the root first, then its children depth-first. */
export function actorsOfPersisted(snapshot: unknown): ActorView[] {
  const found: ActorView[] = [];
  const walk = (node: unknown): void => {
    if (!isRecord(node)) return;
    found.push({ value: node.value, context: node.context, status: node.status as string });
    const children = isRecord(node.children) ? Object.values(node.children) : [];
    for (const child of children) if (isRecord(child)) walk(child.snapshot);
  };
  walk(snapshot);
  return found;
}

/** `{a: {b: "c"}, d: "e"}` under `p` → `p`, `p.a`, `p.a.b`, `p.a.b.c`, `p.d`, `p.d.e`. */
export function activeIds(prefix: string, value: unknown): string[] {
  const ids = [prefix];
  if (typeof value === "string") ids.push(`${prefix}.${value}`);
  else if (isRecord(value))
    for (const [key, inner] of Object.entries(value))
      ids.push(...activeIds(`${prefix}.${key}`, inner));
  return ids;
}

/** `groupState` of compiler/pipeline-states.ts, restated so the page does not bundle the compiler. */
const GROUP_SUFFIX = "_parallel";

/** A map group's item sibling, `review-file[3]`: its lane is its stage's. */
const ITEM = /^(.*)\[\d+\]$/;

/**
 * The running siblings of the group the run is in, as the chart draws them inside the group's
 * state (`p.g.lint`): the run keeps them in its context (`groups`), not in its state value. A
 * map group's items all run in their stage's one lane, which is running while any of them is,
 * and whose items are counted.
 */
function siblingsOf(
  prefix: string,
  value: unknown,
  context: Record<string, unknown>,
): { running: string[]; items?: Record<string, ItemCounts> } {
  if (typeof value !== "string" || !value.endsWith(GROUP_SUFFIX) || !isRecord(context.groups))
    return { running: [] };
  const siblings = context.groups[value.slice(0, -GROUP_SUFFIX.length)];
  if (!isRecord(siblings)) return { running: [] };
  const running = new Set<string>();
  const items: Record<string, ItemCounts> = {};
  for (const [sibling, state] of storedEntries(siblings, isSiblingState)) {
    const lane = ITEM.exec(sibling)?.[1];
    const id = `${prefix}.${value}.${lane ?? sibling}`;
    if (state === "running") running.add(id);
    if (lane === undefined) continue;
    items[id] ??= { total: 0, running: 0, settled: 0 };
    const counts = items[id];
    counts.total += 1;
    if (state === "running") counts.running += 1;
    if (state === "settled") counts.settled += 1;
  }
  return {
    running: [...running],
    ...(Object.keys(items).length > 0 && { items }),
  };
}

/** A stage machine's context names its stage; a pipeline machine's does not (asStage aside). */
function stageIdOf(context: Record<string, unknown>): string | undefined {
  const stage = context.stage;
  if (isRecord(stage) && typeof stage.id === "string") return stage.id;
  return typeof context.stageId === "string" ? context.stageId : undefined;
}

/**
 * The lifecycle phases a stage's state runs, as the chart's pills name them: `setup`'s actor
 * runs Setup, Init and CheckGate, `assert`'s runs Assert and Exit (a snapshot stored before they
 * ran together may still be in `init` or `exit`).
 */
export function lifecyclePhases(lifecycle: string | undefined): readonly string[] {
  if (lifecycle === undefined) return [];
  return PHASES_OF[lifecycle] ?? [lifecycle];
}

const PHASES_OF: Record<string, readonly string[]> = {
  setup: ["setup", "init", "checkGate"],
  assert: ["assert", "exit"],
};

const topState = (value: unknown): string =>
  typeof value === "string" ? value : isRecord(value) ? (Object.keys(value)[0] ?? "") : "";

/** The fields of `record` among `keys` that are set. */
export function pick(
  record: Record<string, unknown>,
  keys: readonly string[],
): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => record[k] !== undefined).map((k) => [k, record[k]]));
}
