import { type Command, Option } from "commander";
import type { StagechartError } from "../../errors.js";
import type { ControlEventName } from "../../testing/events.js";
import {
  type MutationOptions,
  type MutationReport,
  mutationScore,
} from "../../testing/mutation.js";
import { readFixtureFile, readPathFile } from "../../testing/path-file.js";
import { PATH_COVERS, type PathCover } from "../../testing/paths.js";
import { type TestPipelineOptions, testPipeline } from "../../testing/test-pipeline.js";
import { type CliIo, EXIT } from "../io.js";
import { positiveInteger } from "../options.js";
import { loadPipelineForCli } from "../pipelines.js";
import { controlEvents } from "./paths.js";

export function registerTest(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command("test")
    .description("drive the real engine down every path of a pipeline; report transition coverage")
    .argument("<pipeline>", "bundled pipeline name or pipeline file")
    .option("--paths <file>", "replay a saved path list (the output of paths --json)")
    .addOption(
      new Option(
        "--cover <what>",
        "the paths to generate: transitions (as few as take every transition; the default), boundaries (those and each visits threshold on either side; the default with --mutate) or states (one to each distinct end state)",
      ).choices(PATH_COVERS),
    )
    .option("--max-visits <n>", "enter no stage more often than this", positiveInteger, 3)
    .option(
      "--events <names>",
      "control events to add to the generated paths: override,redo,cancel",
      controlEvents,
      [],
    )
    .option(
      "--fixtures <file>",
      'what code and command stages end with: {"<stageId>": {"verdict": "ok"|"skip"|"fail", "output"?}}, or by the path\'s outcome for the stage: {"<stageId>": {"ok": {"verdict": "ok", …}, "fail": {…}}} (an outcome left out is left to the code); a sub-pipeline\'s stage as "<stageId>/<inner stageId>"',
    )
    .option(
      "--mutate <n>",
      "score the paths instead: replay them against n seeded mutants of the pipeline's rules and report the share caught",
      positiveInteger,
    )
    .option(
      "--seed <n>",
      "the seed the mutants are chosen with (with --mutate)",
      positiveInteger,
      1,
    )
    .option("--json", "print the report as JSON")
    .action(
      async (
        name: string,
        flags: {
          paths?: string;
          cover?: PathCover;
          maxVisits: number;
          mutate?: number;
          seed: number;
          fixtures?: string;
          events: ControlEventName[];
          json?: boolean;
        },
      ) => {
        const pipeline = await loadPipelineForCli(name, io, [], { for: "inspection" });
        if (!pipeline) return setExit(EXIT.failed);
        const refuse = (error: StagechartError) => {
          io.stderr(`${error.code}: ${error.message}\n`);
          if (flags.json)
            io.stdout(`${JSON.stringify({ status: "failed", error: error.toModelView() })}\n`);
          setExit(EXIT.failed);
        };
        const saved =
          flags.paths === undefined ? undefined : await readPathFile(flags.paths, pipeline.id);
        if (saved && !saved.ok) return refuse(saved.error);
        const fixtures =
          flags.fixtures === undefined
            ? undefined
            : await readFixtureFile(flags.fixtures, pipeline);
        if (fixtures && !fixtures.ok) return refuse(fixtures.error);
        const common = {
          ...(saved?.ok
            ? { paths: saved.value }
            : {
                events: flags.events,
                cover: flags.cover ?? (flags.mutate ? "boundaries" : "transitions"),
              }),
          maxVisits: flags.maxVisits,
          ...(fixtures?.ok && { fixtures: fixtures.value }),
        };
        if (flags.mutate !== undefined) {
          const scored = await mutationScore(pipeline, {
            ...common,
            mutants: flags.mutate,
            seed: flags.seed,
            ...(!flags.json && { onMutantDone: mutantLines(io) }),
          });
          if (flags.json) io.stdout(`${JSON.stringify(scored, null, 2)}\n`);
          else printScore(io, scored);
          return setExit(scored.paths.failing.length === 0 ? EXIT.done : EXIT.failed);
        }
        const report = await testPipeline(pipeline, {
          ...common,
          ...(!flags.json && { onPathDone: pathLines(io) }),
        });
        if (flags.json) io.stdout(`${JSON.stringify(report, null, 2)}\n`);
        else {
          const { covered, total, uncovered } = report.coverage.transitions;
          io.stdout(
            `${report.passed} passed, ${report.failed} failed; ${covered}/${total} transitions covered\n`,
          );
          for (const u of uncovered) io.stdout(`  uncovered ${u.transition}: ${u.reason}\n`);
        }
        setExit(report.failed === 0 ? EXIT.done : EXIT.failed);
      },
    );
}

/**
 * Each path's line as soon as its run ended (`pass <id>`, `FAIL <id>: <reason>`), counted
 * (`[3/13] pass path-3`) when stdout is a terminal.
 */
function pathLines(io: CliIo): NonNullable<TestPipelineOptions["onPathDone"]> {
  const counted = io.terminalWidth?.() !== undefined;
  return (path, { done, total }) =>
    io.stdout(
      `${counted ? `[${done}/${total}] ` : ""}${path.ok ? "pass" : "FAIL"} ${path.id}${path.reason ? `: ${path.reason}` : ""}\n`,
    );
}

/** Each mutant's line as soon as it is judged: caught (by which path), survived (doing what otherwise) or equivalent (why). */
function mutantLines(io: CliIo): NonNullable<MutationOptions["onMutantDone"]> {
  return (mutant) => {
    const why =
      mutant.status === "caught"
        ? `by ${mutant.caughtBy?.path}: ${mutant.caughtBy?.reason}`
        : mutant.status === "survived"
          ? `${mutant.difference}`
          : `${mutant.equivalence}`;
    io.stdout(`${mutant.status} ${mutant.id} ${mutant.description}: ${why}\n`);
  };
}

function printScore(io: CliIo, report: MutationReport): void {
  const { replayed, failing } = report.paths;
  io.stdout(`paths replayed: ${replayed.length} of ${replayed.length + failing.length}\n`);
  for (const path of failing) io.stdout(`  not replayed ${path.id}: ${path.reason}\n`);
  const changing = report.caught + report.survived;
  const share = report.score === null ? "" : ` (${Math.floor(report.score * 100)}%)`;
  io.stdout(
    `mutation score: ${report.caught} of ${changing} mutants that change behaviour caught${share}; ${report.equivalent} equivalent (seed ${report.seed})\n`,
  );
}
