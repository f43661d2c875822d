import { performance } from "node:perf_hooks";
import { compilePipelineMachine } from "../../src/compiler/pipeline-machine.js";
import { compilePipeline, loadPipeline, type PipelineDefinition } from "../../src/index.js";
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
