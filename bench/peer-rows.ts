import { statSync } from "node:fs";
import { type InterleavedTiming, quartilesOf } from "./interleaved.js";
import { type Comparison, compare } from "./report.js";

/** A SQLite file's bytes with its WAL, once the last connection closed or not. */
export const fileBytes = (file: string): number => {
  let total = 0;
  for (const each of [file, `${file}-wal`]) {
    try {
      total += statSync(each).size;
    } catch {
      // no WAL left once the last connection closed
    }
  }
  return total;
};

/**
 * A row of interleaved timings against another engine (`peer` names its quartiles in the
 * details): the ratio is the median of the rounds' own ratios.
 */
export function interleavedRow(
  name: string,
  labels: { baseline: string; stagechart: string; peer: string },
  timing: InterleavedTiming,
  runsPerRound: number,
): Comparison {
  const perRun = (ms: number) => (ms / runsPerRound).toFixed(1);
  const row = compare(
    name,
    "ms",
    { label: labels.baseline, value: timing.baselineMs.median / runsPerRound },
    { label: labels.stagechart, value: timing.candidateMs.median / runsPerRound },
    {
      rounds: timing.rounds,
      runsPerRound,
      [`${labels.peer}MsQuartiles`]: `${perRun(timing.baselineMs.p25)}–${perRun(timing.baselineMs.p75)}`,
      stagechartMsQuartiles: `${perRun(timing.candidateMs.p25)}–${perRun(timing.candidateMs.p75)}`,
      ratioQuartiles: quartilesOf(timing.ratio),
      cpuRatioMedian: timing.cpuRatio.median,
      cpuRatioQuartiles: quartilesOf(timing.cpuRatio),
    },
  );
  return { ...row, ratio: timing.ratio.median };
}
