import { type Command, InvalidArgumentError } from "commander";
import { StagechartError } from "../../errors.js";
import { forkRun } from "../../runtime/fork.js";
import { type HistoryStep, type HistoryStore, runHistory } from "../../runtime/history.js";
import type { AsyncRunStore } from "../../store/index.js";
import { openExistingAnyStore } from "../any-store.js";
import { drive, refuse } from "../drive.js";
import { type HostSettings, withModel } from "../host-options.js";
import { type CliIo, EXIT } from "../io.js";
import { withRunHost } from "../run-host.js";
import { noStoreFor, openExistingStore, STORE_HELP } from "../store.js";
import {
  answersOf,
  approveOption,
  denyOption,
  inputForOption,
  inputOption,
  inputsOf,
} from "./resume.js";
import { setCtxField } from "./run.js";

interface HistoryFlags {
  store?: string;
  json?: boolean;
}

interface ForkFlags extends HistoryFlags {
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
}

/** `history <runId>` (a run's committed steps) and `fork <runId> --at <step>` (a new run from one). */
export function registerHistory(
  program: Command,
  io: CliIo,
  setExit: (code: number) => void,
): void {
  program
    .command("history")
    .description("a run's committed steps: the events each added, where it left the run")
    .argument("<runId>")
    .option("--store <path|url>", STORE_HELP)
    .option("--json", "print the steps as a JSON array")
    .action(async (runId: string, flags: HistoryFlags) => setExit(await history(runId, flags, io)));
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
    .option("--store <path>", "the run store (default: .stagechart/runs.db)")
    .option("--force", "fork even if the pipeline changed since the run was saved")
    .addOption(approveOption())
    .addOption(denyOption())
    .addOption(inputOption())
    .addOption(inputForOption())
    .option("--headless", "no interactive prompts, even on a terminal")
    .option("--json", "print a JSON summary last on stdout")
    .action(async (runId: string, flags: ForkFlags) => setExit(await fork(runId, flags, io)));
}

function stepNumber(text: string): number {
  const step = Number(text);
  if (!Number.isInteger(step) || step < 1)
    throw new InvalidArgumentError(`a step is a whole number from 1, got "${text}"`);
  return step;
}

async function history(runId: string, flags: HistoryFlags, io: CliIo): Promise<number> {
  const store = await openExistingAnyStore(flags.store);
  if (!store) return refuse(io, flags.json, noStoreFor(runId, flags.store), runId);
  if (!store.ok) return refuse(io, flags.json, store.error, runId);
  try {
    const steps = runHistory(await historyOf(store.value, runId), runId);
    if (!steps.ok) return refuse(io, flags.json, steps.error, runId);
    if (flags.json) io.stdout(`${JSON.stringify(steps.value, null, 2)}\n`);
    else for (const step of steps.value) io.stdout(`${stepLine(step)}\n`);
    return EXIT.done;
  } catch (error) {
    if (!(error instanceof StagechartError)) throw error;
    return refuse(io, flags.json, error, runId);
  } finally {
    await store.value.close();
  }
}

/** What `runHistory` reads of one run, read ahead from either store. */
async function historyOf(store: AsyncRunStore, runId: string): Promise<HistoryStore> {
  const [run, audit, steps] = [
    await store.getRun(runId),
    await store.auditOf(runId),
    await store.stepsOf(runId),
  ];
  const snapshots = new Map<number, unknown>();
  for (const { step } of steps) snapshots.set(step, await store.snapshotAtStep(runId, step));
  return {
    getRun: () => run,
    auditOf: () => audit,
    stepsOf: () => steps,
    snapshotAtStep: (_runId, step) => snapshots.get(step),
  };
}

/** `  3  seq 12–15  2030-01-01T00:00:00.000Z  execute  running  plan → execute (sequential)` */
function stepLine({ step, seq, at, state, status, transitions }: HistoryStep): string {
  const events = seq ? `seq ${seq.from}–${seq.to}` : "no events";
  return [String(step).padStart(3), events.padEnd(12), at, state ?? "-", status, ...transitions]
    .join("  ")
    .trimEnd();
}

async function fork(runId: string, flags: ForkFlags, io: CliIo): Promise<number> {
  const store = openExistingStore(flags.store);
  if (!store) return refuse(io, flags.json, noStoreFor(runId, flags.store), runId);
  if (!store.ok) return refuse(io, flags.json, store.error, runId);
  try {
    const source = store.value.getRun(runId);
    if (!source.ok) return refuse(io, flags.json, source.error, runId);
    const settings = forkSettings(source.value.options as unknown as HostSettings, flags);
    return await withRunHost(
      settings,
      io,
      flags.json,
      { runId },
      async (pipeline, host, progress) => {
        const forked = forkRun(pipeline, runId, {
          host,
          store: store.value,
          at: flags.at,
          set: flags.set,
          force: Boolean(flags.force),
          answers: answersOf(flags),
          inputs: inputsOf(flags),
          resumeWith: { ...settings },
          ...(flags.runId !== undefined && { runId: flags.runId }),
        });
        if (!forked.ok) return refuse(io, flags.json, forked.error, flags.runId);
        return await drive(forked.value, io, Boolean(flags.json), progress);
      },
    );
  } finally {
    store.value.close();
  }
}

/** The source run's settings, with whoever forks deciding about prompts, and the model if given. */
function forkSettings(stored: HostSettings, flags: ForkFlags): HostSettings {
  const settings = { ...stored, headless: Boolean(flags.headless) };
  return flags.model === undefined ? settings : withModel(settings, flags.model);
}
