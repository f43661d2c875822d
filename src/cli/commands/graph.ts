import { type Command, Option } from "commander";
import { GRAPH_FORMATS, renderGraph } from "../../compiler/graph.js";
import { compiledPipeline } from "../../compiler/pipeline-machine.js";
import type { PipelineDefinition } from "../../definitions/pipeline-types.js";
import { pipelineChart } from "../../inspect/chart.js";
import { layoutChart } from "../../inspect/chart-layout.js";
import {
  type ChartDirection,
  chartSvg,
  fittedDirection,
  PAGE_ROOM,
} from "../../inspect/chart-svg.js";
import { type CliIo, EXIT } from "../io.js";
import { loadPipelineForCli } from "../pipelines.js";

/** The formats `graph` prints: the compiler's text graphs, and the visualizer's laid-out chart. */
const FORMATS = [...GRAPH_FORMATS, "svg"] as const;
type Format = (typeof FORMATS)[number];

export function registerGraph(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command("graph")
    .description("draw a pipeline's compiled statechart")
    .argument("<pipeline>", "bundled pipeline name or pipeline file")
    .addOption(new Option("--format <format>", "output format").choices(FORMATS).default("mermaid"))
    .addOption(
      new Option(
        "--direction <direction>",
        "svg: lay the chart out left to right or top to bottom (default: the one that shows it larger on a 1440×900 page, as the visualizer picks)",
      ).choices(["right", "down"]),
    )
    .action(async (name: string, flags: { format: Format; direction?: ChartDirection }) => {
      const pipeline = await loadPipelineForCli(name, io, [], { for: "inspection" });
      if (!pipeline) return setExit(EXIT.failed);
      io.stdout(
        flags.format === "svg"
          ? await svgOf(pipeline, flags.direction)
          : renderGraph(compiledPipeline(pipeline), flags.format, pipeline),
      );
      setExit(EXIT.done);
    });
}

/** The chart the visualizer draws of the pipeline, laid out by the same ELK layout, as SVG. */
async function svgOf(pipeline: PipelineDefinition, direction?: ChartDirection): Promise<string> {
  const chart = pipelineChart(pipeline);
  const layouts = await layoutChart(chart);
  return chartSvg(chart, layouts[direction ?? fittedDirection(layouts, PAGE_ROOM)]);
}
