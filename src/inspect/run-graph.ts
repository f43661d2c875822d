import { existsSync, statSync } from "node:fs";
import { materialiseBundle } from "../bundles/materialise.js";
import type { LoadResult } from "../definitions/diagnostics.js";
import { isWorkflowDirectory, loadWorkflowPipeline } from "../definitions/pi-workflows/index.js";
import { BUILTIN_TOOL_NAMES, loadPipelineFile } from "../definitions/pipeline.js";
import {
  drawableDefinition,
  isPipelineOutline,
  type PipelineOutline,
} from "../definitions/pipeline-outline.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { RunRecord } from "../runtime/run-records.js";
import type { RunStore } from "../runtime/store-port.js";
import {
  type Chart,
  type ChartLayouts,
  chartOfDefinition,
  lifecycleChart,
  pipelineChart,
} from "./chart.js";
import { layoutChart } from "./chart-layout.js";

export type Graph = { pipeline: Chart; lifecycle: Chart; layouts: ChartLayouts };

/** Charts already drawn, by pipeline file and its modification time: loading one takes ~100 ms. */
const drawn = new Map<string, Result<Graph>>();

/** Live machines' charts, laid out, by their definition (an app's machines rarely change). */
const liveDrawn = new Map<string, { pipeline: Chart; layouts: ChartLayouts }>();

export async function liveGraphOf(
  definition: string,
): Promise<{ pipeline: Chart; layouts: ChartLayouts }> {
  const known = liveDrawn.get(definition);
  if (known) return known;
  const pipeline = chartOfDefinition(definition);
  const graph = { pipeline, layouts: await layoutChart(pipeline) };
  liveDrawn.set(definition, graph);
  return graph;
}

/**
 * The run's compiled statechart and the stage lifecycle, drawn from the definition stored with
 * the run (by its hash: what the run was queued with, whatever its file became since), else from
 * the outline the run stored as it started (a library or embedded run has no file to draw from);
 * a run with neither, from its pipeline file or pi-workflows directory. Each is loaded for its
 * structure only: no code module of the pipeline is imported, so opening a chart runs nothing of
 * what the store or file holds.
 */
export async function runGraphOf(store: RunStore, run: RunRecord): Promise<Result<Graph>> {
  const byHash = `definition\u0000${run.definitionHash}`;
  const known = drawn.get(byHash);
  if (known) return known;
  const stored = await storedEntry(store, run.definitionHash);
  if (stored) return remembered(byHash, () => drawGraph(stored));
  const { outline } = run.options;
  if (isPipelineOutline(outline)) return remembered(byHash, () => drawOutline(run.runId, outline));
  const file = run.options.pipelineFile;
  if (typeof file === "string" && existsSync(file))
    return remembered(`${file}\u0000${statSync(file).mtimeMs}`, () => drawGraph(file));
  if (typeof file !== "string")
    return err(
      new StagechartError(
        "Validation/PipelineNotFound",
        `run ${run.runId} stored neither its pipeline's outline nor its file: its chart cannot be drawn`,
        { runId: run.runId },
      ),
    );
  return drawGraph(file);
}

async function drawOutline(runId: string, outline: PipelineOutline): Promise<Result<Graph>> {
  let pipeline: Chart;
  try {
    pipeline = pipelineChart(drawableDefinition(outline));
  } catch (error) {
    return err(
      new StagechartError(
        "Validation/PipelineInvalid",
        `the outline of run ${runId}'s pipeline does not draw: ${error instanceof Error ? error.message : String(error)}`,
        { runId },
      ),
    );
  }
  return ok({ pipeline, lifecycle: lifecycleChart(), layouts: await layoutChart(pipeline) });
}

async function remembered(key: string, draw: () => Promise<Result<Graph>>): Promise<Result<Graph>> {
  const known = drawn.get(key);
  if (known) return known;
  const graph = await draw();
  if (graph.ok) drawn.set(key, graph);
  return graph;
}

/** The stored definition's entry file, written out as a worker writes it; none stored: undefined. */
async function storedEntry(store: RunStore, hash: string): Promise<string | undefined> {
  const bundle = await store.loadDefinition(hash);
  if (!bundle.ok) return undefined;
  const entry = materialiseBundle(hash, bundle.value);
  return entry.ok ? entry.value : undefined;
}

async function drawGraph(file: unknown): Promise<Result<Graph>> {
  if (typeof file !== "string" || !existsSync(file))
    return err(
      new StagechartError(
        "Validation/PipelineNotFound",
        `the run's pipeline file ${String(file)} is not there any more: its chart cannot be drawn`,
        { pipelineFile: file },
      ),
    );
  // The run's MCP tools are not running here: allowedTools naming them are only drawn.
  const toolNames = [...BUILTIN_TOOL_NAMES];
  const loaded: LoadResult<PipelineDefinition> = isWorkflowDirectory(file)
    ? await loadWorkflowPipeline(file, toolNames, { for: "inspection" })
    : await loadPipelineFile(file, { toolNames, importCode: false });
  if (!loaded.ok)
    return err(
      new StagechartError(
        "Validation/PipelineInvalid",
        `the run's pipeline ${file} does not load any more: ${loaded.diagnostics.map((d) => d.message).join("; ")}`,
        { pipelineFile: file },
      ),
    );
  const pipeline = pipelineChart(loaded.value);
  return ok({ pipeline, lifecycle: lifecycleChart(), layouts: await layoutChart(pipeline) });
}
