import { type Command, InvalidArgumentError, Option } from "commander";
import type { ControlEventName } from "../../testing/events.js";
import {
  PATH_COVERS,
  PATH_STRATEGIES,
  type PathCover,
  type PathStrategy,
  pipelinePaths,
} from "../../testing/paths.js";
import { type CliIo, EXIT } from "../io.js";
import { positiveInteger } from "../options.js";
import { loadPipelineForCli } from "../pipelines.js";

const CONTROL_EVENTS: readonly ControlEventName[] = ["override", "redo", "cancel"];

export function registerPaths(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command("paths")
    .description("list the paths through a pipeline's statechart (model-based testing)")
    .argument("<pipeline>", "bundled pipeline name or pipeline file")
    .addOption(
      new Option("--strategy <strategy>", "which paths")
        .choices(PATH_STRATEGIES)
        .default("shortest"),
    )
    .addOption(
      new Option(
        "--cover <what>",
        "states: a path to each distinct end state; transitions: as few paths as take every transition; boundaries: those and each visits threshold on either side",
      )
        .choices(PATH_COVERS)
        .default("states"),
    )
    .option("--max-visits <n>", "enter no stage more often than this", positiveInteger, 3)
    .option("--events <names>", "control events to add: override,redo,cancel", controlEvents, [])
    .option("--json", "print the paths as JSON")
    .action(
      async (
        name: string,
        flags: {
          strategy: PathStrategy;
          cover: PathCover;
          maxVisits: number;
          events: ControlEventName[];
          json?: boolean;
        },
      ) => {
        const pipeline = await loadPipelineForCli(name, io, [], { for: "inspection" });
        if (!pipeline) return setExit(EXIT.failed);
        const list = pipelinePaths(pipeline, flags);
        if (flags.json) io.stdout(`${JSON.stringify(list, null, 2)}\n`);
        else {
          for (const path of list.paths) {
            const steps = path.steps.map((s) => `${s.stage}: ${s.outcome}`).join(" → ");
            io.stdout(`${path.id} (${path.end}): ${steps}\n`);
          }
          const how =
            list.cover === "transitions"
              ? "covering its transitions"
              : list.cover === "boundaries"
                ? "covering its transitions and visits boundaries"
                : list.strategy;
          io.stdout(`${list.paths.length} paths (${how}) through ${list.pipelineId}\n`);
          for (const u of list.untaken ?? [])
            io.stdout(`  no path takes ${u.transition}: ${u.reason}\n`);
        }
        setExit(EXIT.done);
      },
    );
}

/** Parses `--events override,redo,cancel`. */
export function controlEvents(text: string): ControlEventName[] {
  const names = text
    .split(",")
    .map((n) => n.trim().toLowerCase())
    .filter(Boolean);
  const unknown = names.filter((n) => !CONTROL_EVENTS.includes(n as ControlEventName));
  if (unknown.length > 0)
    throw new InvalidArgumentError(
      `unknown ${unknown.join(", ")}; use ${CONTROL_EVENTS.join(",")}`,
    );
  return names as ControlEventName[];
}
