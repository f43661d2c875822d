import type { Command } from "commander";
import type { ControlEventName } from "../../testing/events.js";
import { readPathFile } from "../../testing/path-file.js";
import { testPipeline } from "../../testing/test-pipeline.js";
import { type CliIo, EXIT } from "../io.js";
import { loadPipelineForCli } from "../pipelines.js";
import { controlEvents } from "./paths.js";

export function registerTest(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command("test")
    .description("drive the real engine down every path of a pipeline; report transition coverage")
    .argument("<pipeline>", "bundled pipeline name or pipeline file")
    .option("--paths <file>", "replay a saved path list (the output of paths --json)")
    .option(
      "--events <names>",
      "control events to add to the generated paths: override,redo,cancel",
      controlEvents,
      [],
    )
    .option("--json", "print the report as JSON")
    .action(
      async (
        name: string,
        flags: { paths?: string; events: ControlEventName[]; json?: boolean },
      ) => {
        const pipeline = await loadPipelineForCli(name, io);
        if (!pipeline) return setExit(EXIT.failed);
        let saved: Awaited<ReturnType<typeof readPathFile>> | undefined;
        if (flags.paths !== undefined) {
          saved = await readPathFile(flags.paths, pipeline.id);
          if (!saved.ok) {
            const { code, message } = saved.error;
            io.stderr(`${code}: ${message}\n`);
            if (flags.json)
              io.stdout(
                `${JSON.stringify({ status: "failed", error: saved.error.toModelView() })}\n`,
              );
            return setExit(EXIT.failed);
          }
        }
        const report = await testPipeline(
          pipeline,
          saved?.ok ? { paths: saved.value } : { events: flags.events },
        );
        if (flags.json) io.stdout(`${JSON.stringify(report, null, 2)}\n`);
        else {
          for (const path of report.paths)
            io.stdout(
              `${path.ok ? "pass" : "FAIL"} ${path.id}${path.reason ? `: ${path.reason}` : ""}\n`,
            );
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
