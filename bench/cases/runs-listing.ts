import { existsSync } from "node:fs";
import { join } from "node:path";
import { main } from "../../src/cli/main.js";
import { SqliteStore } from "../../src/store/index.js";
import { quartilesOf, spreadOf, timeInterleaved } from "../interleaved.js";
import { type Comparison, compare } from "../report.js";
import { elapsedMs } from "./start-up.js";

/** Options as large as a CLI run stores (pipeline file, model spec, ctx, definition hashes). */
const OPTIONS = {
  definition: Object.fromEntries(
    Array.from({ length: 60 }, (_, i) => [`stage ${i}`, "0123456789abcdef"]),
  ),
};

/** Runs in the small store. */
const FEW = 10;

/**
 * The page both listings print. `runs` reads one row past it, to tell whether there are more:
 * with a page of 9 both sides read 10 rows, the whole of the small store, and print 9.
 */
const PAGE = FEW - 1;

/**
 * Rounds of the two listings: a listing takes about 1.3 ms, so this is some 4 s a side, and the
 * 800 pairs' median has a 95 % confidence interval of about ±0.4 % with this machine's spread.
 */
const ROUNDS = 1601;

/** `stagechart runs` processes timed over the small store, for the command's own time. */
const PROCESSES = 9;

/**
 * `stagechart runs --json --limit 9` over a store of `many` runs against the same over a store
 * of 10: the same rows read and printed, so what differs is only how many runs the store holds.
 *
 * Everything that can depend on it (opening the file, the query, printing, closing) is the
 * command's `main` in this process: the two alternate run by run, no garbage collected between,
 * and the median of the paired rounds' ratios (`pairedRatioOf`: running first or second cancels
 * out) has a 95 % confidence interval. The rest of a `stagechart runs` process (starting Node,
 * loading the CLI) is the same whatever the store holds, so the command over `many` runs takes
 * the command over 10 (median of 9 processes, the built binary) plus that difference: the row's
 * ratio and interval (the goal's, `bench/goals.ts`). The processes over `many` are timed too, as
 * a check (`processMsOverMany`). Without a build the row is the in-process listing alone.
 */
export async function runsListing(dir: string, many: number): Promise<Comparison> {
  const few = storeOf(join(dir, `runs-${FEW}.db`), FEW);
  const lots = storeOf(join(dir, `runs-${many}.db`), many);
  const args = (path: string) => ["runs", "--json", "--limit", String(PAGE), "--store", path];
  const printed = { [few]: 0, [lots]: 0 };
  const list = (path: string) => async () => {
    let bytes = 0;
    const io = {
      stdout: (text: string) => {
        bytes += text.length;
      },
      stderr: () => undefined,
    };
    const code = await main(args(path), io);
    if (code !== 0) throw new Error(`runs exited ${code}`);
    printed[path] = bytes;
  };
  const timing = await timeInterleaved(
    { baseline: { run: list(few) }, candidate: { run: list(lots) } },
    { warmupRounds: 50, rounds: ROUNDS, collectGarbage: false },
  );
  const listingMs = timing.baselineMs.median;
  const processes = commandProcesses([few, lots], args);
  // What the listing over `many` adds, over the command's time (the listing's own, unbuilt).
  const commandMs = processes ? spreadOf(processes[0]).median : listingMs;
  const overCommand = (ratio: number) => 1 + ((ratio - 1) * listingMs) / commandMs;
  const row = compare(
    `runs --json over ${many} stored runs (${processes ? "the command" : "in process"})`,
    "ms",
    { label: `${FEW} runs`, value: commandMs },
    { label: `${many} runs`, value: commandMs * overCommand(timing.pairedRatio.median) },
    {
      page: PAGE,
      printedBytes: `${printed[few]} and ${printed[lots]}`,
      rounds: timing.rounds,
      ratioConfidence: timing.pairedRatio.confidence,
      goalRatio: 1,
      ...(processes && {
        processes: PROCESSES,
        processMsOverMany: spreadOf(processes[1]).median,
      }),
      ratioLow: overCommand(timing.pairedRatio.low),
      ratioHigh: overCommand(timing.pairedRatio.high),
      inProcessMs: `${listingMs.toFixed(3)} and ${timing.candidateMs.median.toFixed(3)}`,
      inProcessRatio: timing.pairedRatio.median,
      inProcessRatioLow: timing.pairedRatio.low,
      inProcessRatioHigh: timing.pairedRatio.high,
      inProcessRatioQuartiles: quartilesOf(timing.ratio),
      inProcessCpuRatio: timing.cpuRatio.median,
      addedMicroseconds: (timing.pairedRatio.median - 1) * listingMs * 1000,
    },
  );
  return { ...row, ratio: overCommand(timing.pairedRatio.median) };
}

/**
 * `PROCESSES` `stagechart runs` processes over each store, alternating, the built binary: the
 * first store's are the command's time, the others a check (a few processes move by more than
 * a percent). Undefined when not built.
 */
function commandProcesses(
  stores: [string, string],
  args: (path: string) => string[],
): [number[], number[]] | undefined {
  if (!existsSync(join(process.cwd(), "dist", "cli", "main.js"))) return undefined;
  const bin = join(process.cwd(), "bin", "stagechart.js");
  const times: [number[], number[]] = [[], []];
  for (let i = 0; i < PROCESSES; i++)
    for (const side of i % 2 === 0 ? [0, 1] : [1, 0])
      times[side]?.push(elapsedMs([bin, ...args(stores[side] ?? "")]));
  return times;
}

/** A store of `runs` ended runs. */
function storeOf(path: string, runs: number): string {
  const opened = SqliteStore.open(path);
  if (!opened.ok) throw opened.error;
  for (let i = 0; i < runs; i++) {
    // Ids of one length, so both listings print the same number of bytes.
    const runId = `run-${String(i).padStart(6, "0")}`;
    opened.value.createRun({
      runId,
      pipelineId: "bench",
      definitionHash: "hash",
      options: OPTIONS,
    });
    // Ended, as a store's runs mostly are: a run left `running` keeps a live mark, which every
    // opening of the store reads to find steps a lost WAL took (10,000 of them: 150 ms).
    opened.value.updateRun(runId, { status: "done" });
  }
  opened.value.close();
  return path;
}
