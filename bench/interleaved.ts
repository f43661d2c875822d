/** One side of an interleaved comparison: `run` is timed, `after` (delivery, idle gap) is not. */
export interface InterleavedTask {
  run: () => Promise<unknown>;
  after?: () => Promise<void>;
}

export interface InterleavingPlan {
  /** Untimed rounds first (each runs both tasks), so JIT and caches are warm on both sides. */
  warmupRounds: number;
  /** Timed rounds; each runs the baseline and the candidate once, one right after the other. */
  rounds: number;
  /**
   * Whether garbage is collected before every timed run (the default). A forced full collection
   * leaves the next run slower for a while (both engines' runs take 1.5–2.5× longer right after
   * one), which swamps an operation of a millisecond: those rows leave it off.
   */
  collectGarbage?: boolean;
}

export interface Spread {
  median: number;
  /** Interquartile range: half of the rounds fall between these two. */
  p25: number;
  p75: number;
  min: number;
  max: number;
}

export interface InterleavedTiming {
  baselineMs: Spread;
  candidateMs: Spread;
  /** candidate ÷ baseline within each round, summarized over the rounds. */
  ratio: Spread;
  /**
   * The same ratio of the CPU time this process spent in each timed run (`process.cpuUsage`):
   * what other processes on the machine do moves it far less than the wall-clock time.
   */
  cpuRatio: Spread;
  /**
   * The wall-clock ratio of each pair of rounds (the geometric mean of a round and the next, which
   * ran the two sides in the other order, so what running first or second does cancels out), its
   * median with a 95 % confidence interval for it (`medianInterval`).
   */
  pairedRatio: Interval & { median: number };
  rounds: number;
}

/** Where a median lies, with the given confidence. */
export interface Interval {
  low: number;
  high: number;
  confidence: number;
}

/** Which task runs first in a round: ABAB…, swapped every other round so neither always leads. */
export const orderOf = (round: number): ["baseline", "candidate"] | ["candidate", "baseline"] =>
  round % 2 === 0 ? ["baseline", "candidate"] : ["candidate", "baseline"];

/**
 * Times two tasks in alternation rather than one after the other: both see the same machine
 * load, heap and store growth at each moment, and a round's ratio pairs runs made a few
 * milliseconds apart. Garbage is collected before every timed run unless the plan says not to (`node --expose-gc`), so a
 * collection left over by one run is not charged to the next.
 */
export async function timeInterleaved(
  tasks: { baseline: InterleavedTask; candidate: InterleavedTask },
  plan: InterleavingPlan,
): Promise<InterleavedTiming> {
  const once = async (task: InterleavedTask): Promise<{ wall: number; cpu: number }> => {
    if (plan.collectGarbage !== false) globalThis.gc?.();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await task.run();
    const wall = performance.now() - started;
    const { user, system } = process.cpuUsage(cpuBefore);
    await task.after?.();
    return { wall, cpu: (user + system) / 1000 };
  };
  for (let round = 0; round < plan.warmupRounds; round++)
    for (const side of orderOf(round)) await once(tasks[side]);
  const times = {
    baseline: [] as { wall: number; cpu: number }[],
    candidate: [] as { wall: number; cpu: number }[],
  };
  for (let round = 0; round < plan.rounds; round++)
    for (const side of orderOf(round)) times[side].push(await once(tasks[side]));
  const ratios = (of: "wall" | "cpu") =>
    times.candidate.map((t, round) => t[of] / (times.baseline[round]?.[of] ?? Number.NaN));
  return {
    baselineMs: spreadOf(times.baseline.map((t) => t.wall)),
    candidateMs: spreadOf(times.candidate.map((t) => t.wall)),
    ratio: spreadOf(ratios("wall")),
    cpuRatio: spreadOf(ratios("cpu")),
    pairedRatio: pairedRatioOf(ratios("wall")),
    rounds: plan.rounds,
  };
}

/** Rounds 0 and 1, 2 and 3, …: each pair's geometric mean ratio, then their median and interval. */
export function pairedRatioOf(ratios: readonly number[]): Interval & { median: number } {
  const pairs: number[] = [];
  for (let round = 0; round + 1 < ratios.length; round += 2)
    pairs.push(Math.sqrt((ratios[round] ?? Number.NaN) * (ratios[round + 1] ?? Number.NaN)));
  return { median: spreadOf(pairs).median, ...medianInterval(pairs) };
}

/** A spread's quartiles as the rows print them: "0.95–1.06". */
export const quartilesOf = ({ p25, p75 }: Spread): string => `${p25.toFixed(2)}–${p75.toFixed(2)}`;

export function spreadOf(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.round(q * (sorted.length - 1))] ?? Number.NaN;
  return { median: at(0.5), p25: at(0.25), p75: at(0.75), min: at(0), max: at(1) };
}

/**
 * A confidence interval for the median of independent draws, whatever their distribution: the
 * k-th smallest and k-th largest of the n values, with k the largest for which a Binomial(n, ½)
 * falls below k with probability at most (1 − confidence) / 2 (so the median lies between them
 * with at least that confidence). All of them when there are too few for any k, with the
 * confidence that range has (1 − 2^(1−n)).
 */
export function medianInterval(values: readonly number[], confidence = 0.95): Interval {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const tail = (1 - confidence) / 2;
  // P(X < k) for X ~ Binomial(n, ½), summed in logarithms: 2^-n is below a double's range.
  let logChoose = 0;
  let below = 0;
  let k = 0;
  while (k < n / 2) {
    const next = below + Math.exp(logChoose - n * Math.LN2);
    if (next > tail) break;
    below = next;
    logChoose += Math.log(n - k) - Math.log(k + 1);
    k++;
  }
  const at = (index: number) => sorted[index] ?? Number.NaN;
  return k === 0
    ? { low: at(0), high: at(n - 1), confidence: n === 0 ? 0 : 1 - 2 ** (1 - n) }
    : { low: at(k - 1), high: at(n - k), confidence };
}
