import { join } from "node:path";
import { main } from "../../src/cli/main.js";
import { SqliteStore } from "../../src/store/index.js";
import { quartilesOf, timeInterleaved } from "../interleaved.js";
import { type Comparison, compare } from "../report.js";

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

/**
 * `stagechart runs --json --limit 9` over a store of `many` runs against the same over a store
 * of 10: the same rows read and printed, so what differs is only how many runs the store holds.
 * The two alternate run by run; a listing takes about a millisecond, so no garbage is collected
 * between.
 * The row's ratio is the median of the paired rounds' ratios (`pairedRatioOf`: running first or
 * second cancels out), with a confidence interval for it (`ratioLow`–`ratioHigh`): the goal is
 * judged by its upper end (`bench/goals.ts`).
 */
export async function runsListing(dir: string, many: number): Promise<Comparison> {
  const few = storeOf(join(dir, `runs-${FEW}.db`), FEW);
  const lots = storeOf(join(dir, `runs-${many}.db`), many);
  const printed = { [few]: 0, [lots]: 0 };
  const list = (path: string) => async () => {
    let bytes = 0;
    const io = {
      stdout: (text: string) => {
        bytes += text.length;
      },
      stderr: () => undefined,
    };
    const code = await main(["runs", "--json", "--limit", String(PAGE), "--store", path], io);
    if (code !== 0) throw new Error(`runs exited ${code}`);
    printed[path] = bytes;
  };
  const timing = await timeInterleaved(
    { baseline: { run: list(few) }, candidate: { run: list(lots) } },
    { warmupRounds: 50, rounds: ROUNDS, collectGarbage: false },
  );
  const row = compare(
    `runs --json over ${many} stored runs`,
    "ms",
    { label: `${FEW} runs`, value: timing.baselineMs.median },
    { label: `${many} runs`, value: timing.candidateMs.median },
    {
      page: PAGE,
      printedBytes: `${printed[few]} and ${printed[lots]}`,
      rounds: timing.rounds,
      ratioQuartiles: quartilesOf(timing.ratio),
      ratioMedian: timing.ratio.median,
      pairedRatioMedian: timing.pairedRatio.median,
      ratioLow: timing.pairedRatio.low,
      ratioHigh: timing.pairedRatio.high,
      ratioConfidence: timing.pairedRatio.confidence,
      cpuRatioMedian: timing.cpuRatio.median,
      goalRatio: 1,
    },
  );
  return { ...row, ratio: timing.pairedRatio.median };
}

function storeOf(path: string, runs: number): string {
  const opened = SqliteStore.open(path);
  if (!opened.ok) throw opened.error;
  for (let i = 0; i < runs; i++)
    opened.value.createRun({
      runId: `run-${i}`,
      pipelineId: "bench",
      definitionHash: "hash",
      options: OPTIONS,
    });
  opened.value.close();
  return path;
}
