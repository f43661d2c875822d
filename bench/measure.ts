import { readFileSync } from "node:fs";
import { Bench, type FnOptions, type Task } from "tinybench";

export interface Timed {
  /** Median time of one iteration, in milliseconds. */
  medianMs: number;
  /** Relative margin of error of the mean, in percent. */
  rme: number;
  samples: number;
}

export interface TimedTask {
  name: string;
  fn: () => Promise<unknown>;
  hooks?: Pick<FnOptions, "beforeEach" | "afterEach">;
}

export interface TimingBudget {
  /** Milliseconds each task runs for, at least. */
  time: number;
  /** Iterations each task runs, at least. */
  iterations: number;
}

const DEFAULT_BUDGET: TimingBudget = { time: 2000, iterations: 20 };

/**
 * Times the baseline and the candidate one after the other in one tinybench run, in this
 * process, with the same budget and warm-up.
 */
export async function timeSideBySide(
  baseline: TimedTask,
  candidate: TimedTask,
  budget: TimingBudget = DEFAULT_BUDGET,
): Promise<[Timed, Timed]> {
  const bench = new Bench({
    time: budget.time,
    iterations: budget.iterations,
    warmupTime: Math.min(500, budget.time / 4),
    warmupIterations: 3,
    throws: true,
  });
  for (const task of [baseline, candidate]) bench.add(task.name, task.fn, task.hooks);
  const [first, second] = await bench.run();
  return [timed(first), timed(second)];
}

function timed(task: Task | undefined): Timed {
  const result = task?.result;
  if (!result || (result.state !== "completed" && result.state !== "aborted-with-statistics")) {
    throw new Error(`benchmark ${task?.name} did not complete (${result?.state})`);
  }
  return {
    medianMs: result.latency.p50,
    rme: result.latency.rme,
    samples: result.latency.samplesCount,
  };
}

function collectGarbage(): void {
  if (!globalThis.gc) throw new Error("run node with --expose-gc (npm run bench does)");
  globalThis.gc();
  globalThis.gc();
}

/**
 * Heap in use once garbage is collected, in bytes. The event loop turns first: what only a
 * pending task still holds (finalization of weak references, timers just cleared) is let go.
 */
export async function settledHeap(): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 0));
  collectGarbage();
  await new Promise((resolve) => setImmediate(resolve));
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

/**
 * Bytes this process has handed to write(2) and its kin so far (Linux `/proc/self/io` wchar),
 * or undefined where the kernel does not say.
 */
export function bytesWrittenByProcess(): number | undefined {
  try {
    const io = readFileSync("/proc/self/io", "utf8");
    const wchar = /^wchar:\s*(\d+)$/m.exec(io)?.[1];
    return wchar === undefined ? undefined : Number(wchar);
  } catch {
    return undefined;
  }
}
