import type { Command } from "commander";
import { StagechartError } from "../../errors.js";
import { type HistoryStep, readHistory } from "../../runtime/run-history.js";
import { openExistingAnyStore } from "../any-store.js";
import { refuse } from "../drive.js";
import { type CliIo, EXIT } from "../io.js";
import { noStoreFor, STORE_HELP } from "../store.js";

interface HistoryFlags {
  store?: string;
  json?: boolean;
}

/** `history <runId>`: a run's committed steps. */
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
}

async function history(runId: string, flags: HistoryFlags, io: CliIo): Promise<number> {
  const store = await openExistingAnyStore(flags.store);
  if (!store) return refuse(io, flags.json, noStoreFor(runId, flags.store), runId);
  if (!store.ok) return refuse(io, flags.json, store.error, runId);
  try {
    const steps = await readHistory(store.value, runId);
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

/** `  3  seq 12–15  2030-01-01T00:00:00.000Z  execute  running  plan → execute (sequential)` */
function stepLine({ step, seq, at, state, status, transitions }: HistoryStep): string {
  const events = seq ? `seq ${seq.from}–${seq.to}` : "no events";
  return [String(step).padStart(3), events.padEnd(12), at, state ?? "-", status, ...transitions]
    .join("  ")
    .trimEnd();
}
