import { type Command, Option } from "commander";
import { GRAPH_FORMATS, type GraphFormat, renderGraph } from "../../compiler/graph.js";
import { compiledPipeline } from "../../compiler/pipeline-machine.js";
import { type CliIo, EXIT } from "../io.js";
import { loadPipelineForCli } from "../pipelines.js";

export function registerGraph(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command("graph")
    .description("draw a pipeline's compiled statechart")
    .argument("<pipeline>", "bundled pipeline name or pipeline file")
    .addOption(
      new Option("--format <format>", "output format").choices(GRAPH_FORMATS).default("mermaid"),
    )
    .action(async (name: string, flags: { format: GraphFormat }) => {
      const pipeline = await loadPipelineForCli(name, io, [], { for: "inspection" });
      if (!pipeline) return setExit(EXIT.failed);
      io.stdout(renderGraph(compiledPipeline(pipeline), flags.format, pipeline));
      setExit(EXIT.done);
    });
}
