import { Command, CommanderError } from "commander";
import { VERSION } from "../version.js";
import { registerGraph } from "./commands/graph.js";
import { registerHistory } from "./commands/history.js";
import { registerInspect } from "./commands/inspect.js";
import { registerPaths } from "./commands/paths.js";
import { registerResume } from "./commands/resume.js";
import { registerRun } from "./commands/run.js";
import { registerRuns } from "./commands/runs.js";
import { registerTest } from "./commands/test.js";
import { registerValidate } from "./commands/validate.js";
import { reportCrash } from "./crash.js";
import { type CliIo, EXIT, processIo } from "./io.js";

/** Runs the `stagechart` command line; returns the exit code instead of exiting. Never throws. */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let exitCode: number = EXIT.done;
  let json = false;
  const program = new Command("stagechart")
    .description("A statechart engine for LLM agent pipelines")
    .version(VERSION, "-v, --version", "print the stagechart version")
    .helpCommand("help [command]", "show help for a command")
    .showHelpAfterError("(run stagechart --help for usage)")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    // Whether the command about to run prints JSON: then a crash is reported as JSON too.
    .hook("preAction", (_program, command) => {
      json = Boolean(command.opts().json);
    });
  const setExit = (code: number) => {
    exitCode = code;
  };
  registerValidate(program, io, setExit);
  registerRun(program, io, setExit);
  registerResume(program, io, setExit);
  registerRuns(program, io, setExit);
  registerHistory(program, io, setExit);
  registerGraph(program, io, setExit);
  registerInspect(program, io, setExit);
  registerPaths(program, io, setExit);
  registerTest(program, io, setExit);
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) return reportCrash(error, io, json);
    // Help and version asked for exit 0; help shown for a usage mistake (no command) does not.
    return error.exitCode === 0 ? EXIT.done : EXIT.usage;
  }
  return exitCode;
}
