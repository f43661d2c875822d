import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { compilePipelineMachine } from "../../src/compiler/pipeline-machine.js";
import {
  compilePipeline,
  loadPipeline,
  type PipelineDefinition,
  SqliteStore,
} from "../../src/index.js";
import { type Comparison, compare } from "../report.js";
import { runToEnd } from "../stagechart-runs.js";
import {
  hostFor,
  LOOKUP_TOOL,
  PROBE_TOOL,
  pipelineOf,
  stageDefinition,
  stageIdsOf,
  type Workload,
} from "../workload.js";

/** How a group of `siblings` stages scales against as many stages in a chain, and compiling. */
export interface Scale {
  siblings: number;
  turns: number;
  maxConcurrency: number;
}

/**
 * A parallel group of `siblings` LLM stages (`maxConcurrency` at a time) against a chain of as
 * many: the time per sibling over the time per stage, one run of each.
 */
export async function parallelScaling(scale: Scale): Promise<Comparison> {
  const chain: Workload = { stages: scale.siblings, turns: scale.turns, outputBytes: 200 };
  // The group's workload: a fan-out stage, the siblings, the join; the script covers them all.
  const grouped: Workload = { ...chain, stages: scale.siblings + 2 };
  const sequential = await pipelineOf(chain);
  const group = await groupPipeline(grouped, scale.maxConcurrency);
  const chainMs = await timeOnce(() => runToEnd(sequential, hostFor(chain)));
  const groupMs = await timeOnce(() => runToEnd(group, hostFor(grouped)));
  const perStage = chainMs / scale.siblings;
  const perSibling = groupMs / (scale.siblings + 2);
  return compare(
    `parallel group: ${scale.siblings} siblings (max ${scale.maxConcurrency} at once) × ${scale.turns} turns, per stage`,
    "ms",
    { label: `a chain of ${scale.siblings}`, value: perStage },
    { label: "a sibling", value: perSibling },
    { chainMs, groupMs, goalRatio: 2 },
  );
}

/**
 * A map group of `siblings` items of one LLM stage (`maxConcurrency` at a time) against a chain
 * of as many stages: the time per item over the time per stage, one run of each. The list comes
 * from a code stage, so every model call is an item's (or the join's).
 */
export async function mapScaling(scale: Scale): Promise<Comparison> {
  const chain: Workload = { stages: scale.siblings, turns: scale.turns, outputBytes: 200 };
  // The map's workload: its one item stage and its join; the script covers both.
  const mapped: Workload = { ...chain, stages: 2 };
  const sequential = await pipelineOf(chain);
  const map = await mapPipeline(mapped, scale.siblings, scale.maxConcurrency);
  const chainMs = await timeOnce(() => runToEnd(sequential, hostFor(chain)));
  const mapMs = await timeOnce(() => runToEnd(map, hostFor(mapped)));
  const perStage = chainMs / scale.siblings;
  const perItem = mapMs / (scale.siblings + 1);
  return compare(
    `map group of ${scale.siblings} items (max ${scale.maxConcurrency} at once) × ${scale.turns} turns, per stage`,
    "ms",
    { label: `a chain of ${scale.siblings}`, value: perStage },
    { label: "an item", value: perItem },
    { chainMs, mapMs, goalRatio: 2 },
  );
}

/** The sizes growth is measured at, and the turns each stage takes there. */
const GROWTH_SIZES = [100, 1000, 5000] as const;
const GROWTH_TURNS = 2;

/** A chain of `stages`, or a group of as many siblings (16 at once) between a fan-out stage and a join. */
async function growthPipeline(kind: "chain" | "group", stages: number) {
  const workload: Workload = {
    stages: kind === "chain" ? stages : stages + 2,
    turns: GROWTH_TURNS,
    outputBytes: 200,
  };
  const pipeline =
    kind === "chain" ? await pipelineOf(workload) : await groupPipeline(workload, 16);
  return { workload, pipeline };
}

/**
 * Time per stage of an in-memory chain, and per sibling of a parallel group (16 at once), at
 * 100, 1,000 and 5,000 stages: the largest's against the smallest's. Flat (1.00×) means each
 * stage costs the same however many there are; a context copied whole at each stage made it
 * grow with the stages (quadratic in all). One run of each size, the scripted model estimating
 * tokens, after an untimed run at the smallest size.
 */
export async function growthScaling(): Promise<Comparison[]> {
  const perStage = async (kind: "chain" | "group", stages: number): Promise<number> => {
    const { workload, pipeline } = await growthPipeline(kind, stages);
    globalThis.gc?.();
    const ms = await timeOnce(() => runToEnd(pipeline, hostFor(workload)));
    return ms / workload.stages;
  };
  const rows: Comparison[] = [];
  for (const kind of ["chain", "group"] as const) {
    const times: Record<number, number> = {};
    // Untimed first: the smallest run would otherwise pay for compiling the engine's code.
    await perStage(kind, GROWTH_SIZES[0]);
    for (const size of GROWTH_SIZES) times[size] = await perStage(kind, size);
    const [smallest, , largest] = GROWTH_SIZES;
    rows.push(
      compare(
        kind === "chain"
          ? `growth: a chained stage at ${largest} stages against at ${smallest} (in memory)`
          : `growth: a parallel sibling at ${largest} siblings against at ${smallest} (in memory)`,
        "ms",
        { label: `${smallest}`, value: times[smallest] as number },
        { label: `${largest}`, value: times[largest] as number },
        Object.fromEntries(GROWTH_SIZES.map((size) => [`msAt${size}`, times[size] as number])),
      ),
    );
  }
  return rows;
}

/**
 * The same growth, durable: a chain and a group (16 at once) of 100, 1,000 and 5,000 stages, each
 * run on a fresh SQLite store, a commit per step. Per stage, the time and the bytes its store
 * keeps (the file once the store is closed, its WAL checkpointed into it): a snapshot that
 * carried every finished stage made both grow with the stages, and 5,000 durable siblings did
 * not finish. One run of each size after an untimed one at the smallest.
 */
export async function durableGrowth(dir: string): Promise<Comparison[]> {
  let runs = 0;
  const perStage = async (kind: "chain" | "group", stages: number) => {
    const { workload, pipeline } = await growthPipeline(kind, stages);
    const file = join(dir, `growth-${kind}-${stages}-${++runs}.db`);
    const opened = SqliteStore.open(file);
    if (!opened.ok) throw opened.error;
    globalThis.gc?.();
    const ms = await timeOnce(() => runToEnd(pipeline, hostFor(workload), opened.value));
    opened.value.close();
    const bytes =
      statSync(file).size + (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);
    return { ms: ms / workload.stages, bytes: bytes / workload.stages };
  };
  const rows: Comparison[] = [];
  for (const kind of ["chain", "group"] as const) {
    const at: Record<number, { ms: number; bytes: number }> = {};
    await perStage(kind, GROWTH_SIZES[0]);
    for (const size of GROWTH_SIZES) at[size] = await perStage(kind, size);
    const [smallest, , largest] = GROWTH_SIZES;
    const small = at[smallest] as { ms: number; bytes: number };
    const large = at[largest] as { ms: number; bytes: number };
    const what = kind === "chain" ? "a chained stage" : "a parallel sibling";
    const many = kind === "chain" ? "stages" : "siblings";
    const details = Object.fromEntries(
      GROWTH_SIZES.flatMap((size) => [
        [`msAt${size}`, at[size]?.ms as number],
        [`bytesAt${size}`, at[size]?.bytes as number],
      ]),
    );
    rows.push(
      compare(
        `durable growth: ${what} at ${largest} ${many} against at ${smallest}`,
        "ms",
        { label: `${smallest}`, value: small.ms },
        { label: `${largest}`, value: large.ms },
        details,
      ),
      compare(
        `durable growth: bytes stored per ${kind === "chain" ? "stage" : "sibling"} at ${largest} ${many} against at ${smallest}`,
        "bytes",
        { label: `${smallest}`, value: small.bytes },
        { label: `${largest}`, value: large.bytes },
      ),
    );
  }
  return rows;
}

/**
 * Compiling a chain of `stages` against 10-stage chains compiled as many times as make the same
 * number of stages: 1.00× is linear. The goal is under a second for 1,000 stages. Measured
 * uncached: a run reuses the machine compiled for an equal definition, so these would all be one.
 */
export async function compileScaling(stages: number): Promise<Comparison> {
  const small: Workload = { stages: 10, turns: 3, outputBytes: 200 };
  const large: Workload = { ...small, stages };
  const smallPipelines = await Promise.all(
    Array.from({ length: stages / 10 }, () => pipelineOf(small)),
  );
  const largePipeline = await pipelineOf(large);
  compilePipelineMachine(await pipelineOf(small));
  const smallMs = await timeOnce(async () => {
    for (const pipeline of smallPipelines) compilePipelineMachine(pipeline);
  });
  const largeMs = await timeOnce(async () => compilePipelineMachine(largePipeline));
  // A run's machine for a definition already compiled in this process: hashed, not compiled.
  const host = hostFor(small);
  compilePipeline(largePipeline, host);
  const cachedMs = await timeOnce(async () => compilePipeline(largePipeline, host));
  return compare(
    `compiling a ${stages}-stage pipeline`,
    "ms",
    { label: `${stages / 10} × 10 stages`, value: smallMs },
    { label: `${stages} stages`, value: largeMs },
    { goalMs: 1000, cachedMs },
  );
}

async function timeOnce(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

/** A code stage listing `items` things, each run through the workload's first stage, joined by its second. */
async function mapPipeline(
  workload: Workload,
  items: number,
  maxConcurrency: number,
): Promise<PipelineDefinition> {
  const [item, join] = stageIdsOf(workload) as [string, string];
  const list = Array.from({ length: items }, (_, i) => `item-${i}`);
  const loaded = await loadPipeline(
    {
      id: "bench-map",
      context: { type: "object", properties: { task: { type: "string" } } },
      entry: "list",
      stages: {
        list: { code: () => ({ verdict: "ok", output: { items: list } }) },
        [item]: { stage: stageDefinition(item, workload.turns) },
        [join]: { stage: stageDefinition(join, workload.turns) },
      },
      next: {
        list: {
          map: { over: "output.items", stage: item },
          join,
          policy: "all-settled",
          maxConcurrency,
        },
      },
    },
    { toolNames: [LOOKUP_TOOL, PROBE_TOOL] },
  );
  if (!loaded.ok) throw new Error(`pipeline: ${JSON.stringify(loaded.diagnostics)}`);
  return loaded.value;
}

async function groupPipeline(
  workload: Workload,
  maxConcurrency: number,
): Promise<PipelineDefinition> {
  const ids = stageIdsOf(workload);
  const [fan, ...rest] = ids;
  const join = rest.pop() as string;
  const loaded = await loadPipeline(
    {
      id: "bench-group",
      context: { type: "object", properties: { task: { type: "string" } } },
      entry: fan as string,
      stages: Object.fromEntries(
        ids.map((id) => [id, { stage: stageDefinition(id, workload.turns) }]),
      ),
      next: {
        [fan as string]: { parallel: rest, join, policy: "all-settled", maxConcurrency },
      },
    },
    { toolNames: [LOOKUP_TOOL, PROBE_TOOL] },
  );
  if (!loaded.ok) throw new Error(`pipeline: ${JSON.stringify(loaded.diagnostics)}`);
  return loaded.value;
}
