import { Command, CommanderError } from "commander";
import { VERSION } from "../version.js";
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
  try {
    for (const register of await registrationsFor(argv)) register(program, io, setExit);
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) return reportCrash(error, io, json);
    // Help and version asked for exit 0; help shown for a usage mistake (no command) does not.
    return error.exitCode === 0 ? EXIT.done : EXIT.usage;
  }
  return exitCode;
}

type Register = (program: Command, io: CliIo, setExit: (code: number) => void) => void;

const validate = async () => (await import("./commands/validate.js")).registerValidate;
const run = async () => (await import("./commands/run.js")).registerRun;
const resume = async () => (await import("./commands/resume.js")).registerResume;
const runs = async () => (await import("./commands/runs.js")).registerRuns;
const history = async () => (await import("./commands/history.js")).registerHistory;
const prune = async () => (await import("./commands/prune.js")).registerPrune;
const fork = async () => (await import("./commands/fork.js")).registerFork;
const graph = async () => (await import("./commands/graph.js")).registerGraph;
const inspect = async () => (await import("./commands/inspect.js")).registerInspect;
const paths = async () => (await import("./commands/paths.js")).registerPaths;
const test = async () => (await import("./commands/test.js")).registerTest;
const worker = async () => (await import("./commands/worker.js")).registerWorker;
const serve = async () => (await import("./commands/serve.js")).registerServe;

/** Each command's module by the command's name, in the order `--help` lists them. */
const COMMANDS: Record<string, () => Promise<Register>> = {
  validate,
  run,
  resume,
  cancel: resume,
  override: resume,
  redo: resume,
  runs,
  show: runs,
  audit: runs,
  history,
  prune,
  fork,
  graph,
  inspect,
  serve,
  paths,
  test,
  worker,
};

/**
 * The command modules this command line needs: only the named command's, none for `--version`,
 * all of them otherwise (help, a mistyped command), so start-up loads only what runs.
 */
async function registrationsFor(argv: readonly string[]): Promise<Register[]> {
  const [first] = argv;
  if (first === "-v" || first === "--version") return [];
  const named = first === undefined ? undefined : Object.hasOwn(COMMANDS, first) && COMMANDS[first];
  const loaders = named ? [named] : [...new Set(Object.values(COMMANDS))];
  return Promise.all(loaders.map((load) => load()));
}
