import { type Command, InvalidArgumentError, Option } from "commander";
import { bundleDefinition } from "../../bundles/index.js";
import type { PipelineDefinition } from "../../definitions/pipeline-types.js";
import { err, type Result, StagechartError } from "../../errors.js";
import { createFork, type ForkSettings, forkRun } from "../../runtime/fork-run.js";
import type { Host } from "../../runtime/host.js";
import type { RunStore } from "../../runtime/store-port.js";
import { type HostSettings, withModel } from "../../runtime/stored-host.js";
import { openExistingAnyStore } from "../any-store.js";
import { loadForDetach, loadStoredForDetach, reportQueued } from "../detach.js";
import { drive, refuse } from "../drive.js";
import { type CliIo, EXIT } from "../io.js";
import type { Progress } from "../live-progress.js";
import { maxParallelOption } from "../options.js";
import { withRunHost } from "../run-host.js";
import { noStoreFor, STORE_HELP } from "../store.js";
import {
  answersOf,
  approveOption,
  denyOption,
  inputForOption,
  inputOption,
  inputsOf,
} from "./resume.js";
import { setCtxField } from "./run.js";

interface ForkFlags {
  store?: string;
  json?: boolean;
  approve?: string[];
  deny?: string[];
  input?: string;
  inputFor?: string;
  at: number;
  runId?: string;
  set: Record<string, unknown>;
  model?: string;
  headless?: boolean;
  force?: boolean;
  detach?: boolean;
  maxParallel?: number;
}

/** `fork <runId> --at <step>`: a new run from a step of a stored run, on either store. */
export function registerFork(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command("fork")
    .description("start a new run from a step of a stored run (which stays as it is)")
    .argument("<runId>")
    .requiredOption("--at <step>", "the step to start from (see `history`)", stepNumber)
    .option("--run-id <id>", "the new run's id (default: generated)")
    .option(
      "--set <key=value>",
      "change a ctx field in the new run (JSON values are parsed); repeatable",
      setCtxField,
      {},
    )
    .option("--model <spec>", "the model the new run uses (default: the source run's)")
    .option("--store <path|url>", STORE_HELP)
    .option("--force", "fork even if the pipeline changed since the run was saved")
    .addOption(approveOption())
    .addOption(denyOption())
    .addOption(inputOption())
    .addOption(inputForOption())
    .option("--headless", "no interactive prompts, even on a terminal")
    .option("--json", "print a JSON summary last on stdout")
    .addOption(maxParallelOption())
    .addOption(
      new Option(
        "--detach",
        "do not run it here: store it as queued, with its definition, for a worker; prints its id",
      ).conflicts(["force", "approve", "deny", "input"]),
    )
    .action(async (runId: string, flags: ForkFlags) => setExit(await fork(runId, flags, io)));
}

function stepNumber(text: string): number {
  const step = Number(text);
  if (!Number.isInteger(step) || step < 1)
    throw new InvalidArgumentError(`a step is a whole number from 1, got "${text}"`);
  return step;
}

/**
 * The fork made on the store of `--store` through the asynchronous contract (`createFork`), then
 * resumed here as `resume` resumes a run there — an owned, leased run on PostgreSQL — or, with
 * `--detach`, left queued for a worker.
 */
async function fork(runId: string, flags: ForkFlags, io: CliIo): Promise<number> {
  const opened = await openExistingAnyStore(flags.store);
  if (!opened) return refuse(io, flags.json, noStoreFor(runId, flags.store), runId);
  if (!opened.ok) return refuse(io, flags.json, opened.error, runId);
  const store = opened.value;
  try {
    const source = await store.getRun(runId);
    if (!source.ok) return refuse(io, flags.json, source.error, runId);
    const settings = forkSettings(source.value.options as unknown as HostSettings, flags);
    const request: ForkSettings = {
      at: flags.at,
      set: flags.set,
      resumeWith: { ...settings },
      force: Boolean(flags.force),
      source: source.value,
      ...(flags.runId !== undefined && { runId: flags.runId }),
    };
    if (flags.detach)
      return await detachFork(
        runId,
        source.value.definitionHash,
        request,
        settings,
        store,
        flags,
        io,
      );
    return await withRunHost(settings, io, flags.json, { runId }, (pipeline, host, progress) =>
      forkHere(pipeline, runId, request, store, flags, io, { host, progress }),
    );
  } catch (error) {
    if (!(error instanceof StagechartError)) throw error;
    return refuse(io, flags.json, error, flags.runId);
  } finally {
    await store.close();
  }
}

/**
 * The fork created and resumed in this process (`forkRun`), as `resume` continues a run on its
 * store. A changed pipeline (unforced) and answers it has no request for are refused before
 * anything is stored; a resume refused all the same (a store failing) ends it.
 */
async function forkHere(
  pipeline: PipelineDefinition,
  sourceRunId: string,
  fork: ForkSettings,
  store: RunStore,
  flags: ForkFlags,
  io: CliIo,
  { host, progress }: { host: Host; progress: Progress },
): Promise<number> {
  const resumed = await forkRun(pipeline, sourceRunId, {
    ...fork,
    store,
    host,
    force: Boolean(flags.force),
    answers: answersOf(flags),
    inputs: inputsOf(flags),
  });
  if (!resumed.ok) return refuse(io, flags.json, resumed.error, flags.runId);
  return await drive(resumed.value, io, Boolean(flags.json), progress);
}

/**
 * `fork --detach`: the fork stored `queued` with the definition its source ran, for a worker to
 * take. A definition the store holds already (a source queued with `run --detach`) is loaded
 * from there, as a worker loads it: the source's pipeline file need not be on this machine.
 * Else the file is loaded and its files saved under its hash, as `run --detach` saves them; a
 * pipeline changed since is refused: a worker runs exactly the stored definition and cannot be
 * told to force.
 */
async function detachFork(
  sourceRunId: string,
  definitionHash: string,
  fork: ForkSettings,
  settings: HostSettings,
  store: RunStore,
  flags: ForkFlags,
  io: CliIo,
): Promise<number> {
  const refused = (error: StagechartError) => refuse(io, flags.json, error, flags.runId);
  const stored = await store.loadDefinition(definitionHash);
  const loaded = stored.ok
    ? await loadStoredForDetach(definitionHash, stored.value, settings, io)
    : await storedFromFile(sourceRunId, definitionHash, settings, store, io);
  if (!loaded.ok) return refused(loaded.error);
  const pipeline = loaded.value;
  if (!pipeline) return EXIT.failed;
  const created = await createFork(pipeline, sourceRunId, { ...fork, store, queued: true });
  if (!created.ok) return refused(created.error);
  const { runId } = created.value;
  return reportQueued(io, Boolean(flags.json), {
    runId,
    definitionHash,
    from: { runId: sourceRunId, step: fork.at },
  });
}

/**
 * The source's pipeline loaded from its file and stored under its hash, for a source whose
 * definition the store does not hold; `undefined` once the loader has printed why it does not load.
 */
async function storedFromFile(
  sourceRunId: string,
  definitionHash: string,
  settings: HostSettings,
  store: RunStore,
  io: CliIo,
): Promise<Result<PipelineDefinition | undefined>> {
  const loaded = await loadForDetach(settings.pipelineFile, settings, io);
  if (!loaded.ok || !loaded.value) return loaded;
  const bundled = await bundleDefinition(loaded.value);
  if (!bundled.ok) return bundled;
  if (bundled.value.hash !== definitionHash)
    return err(
      new StagechartError(
        "Session/DefinitionDrift",
        `the pipeline changed since run ${sourceRunId} was saved: a detached fork runs on a worker, which cannot be told to force it (fork it here with --force instead)`,
        { runId: sourceRunId },
      ),
    );
  await store.saveDefinition(bundled.value.hash, bundled.value.bundle);
  return loaded;
}

/** The source run's settings, with whoever forks deciding about prompts, and the model if given. */
function forkSettings(stored: HostSettings, flags: ForkFlags): HostSettings {
  const settings = {
    ...stored,
    headless: Boolean(flags.headless),
    ...(flags.maxParallel !== undefined && { maxParallel: flags.maxParallel }),
  };
  return flags.model === undefined ? settings : withModel(settings, flags.model);
}
