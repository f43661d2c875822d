import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { dirname } from "node:path";

/** What a goal holds to its limit: two figures and the ratio between them. */
export interface Figure {
  baseline: string;
  stagechart: string;
  ratio: number | undefined;
  /** A confidence interval for the ratio, for a goal held by its upper end. */
  interval?: { low: number; high: number };
}

/** A goal as measured in one run of the benchmarks: its row of the goal table. */
export interface GoalResult extends Figure {
  goal: string;
  limit: number;
  verdict: "met" | "MISSED" | "not measured";
  note?: string;
}

/** One benchmark: the baseline and stagechart measured side by side, and their ratio. */
export interface Comparison {
  name: string;
  unit: string;
  baseline: { label: string; value: number };
  stagechart: { label: string; value: number };
  /** stagechart ÷ baseline; undefined when the baseline is not a positive number. */
  ratio: number | undefined;
  /** Further figures of the same measurement (sizes, steps, margins of error). */
  details?: Record<string, number | string | undefined>;
  /** The most the ratio may be, as the case states it; `bench/goals.ts` judges the performance goals. */
  goal?: number;
}

export function compare(
  name: string,
  unit: string,
  baseline: Comparison["baseline"],
  stagechart: Comparison["stagechart"],
  details?: Comparison["details"],
  goal?: number,
): Comparison {
  const ratio = baseline.value > 0 ? stagechart.value / baseline.value : undefined;
  return {
    name,
    unit,
    baseline,
    stagechart,
    ratio,
    ...(details && { details }),
    ...(goal !== undefined && { goal }),
  };
}

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  platform: string;
}

export function describeMachine(): Machine {
  return {
    cpu: cpus()[0]?.model.trim() ?? "unknown",
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

export const formatValue = (value: number, unit: string): string => {
  if (unit === "bytes") {
    if (Math.abs(value) >= 2 ** 20) return `${(value / 2 ** 20).toFixed(2)} MiB`;
    if (Math.abs(value) >= 1024) return `${(value / 1024).toFixed(1)} KiB`;
    return `${Math.round(value)} B`;
  }
  if (Number.isInteger(value) && unit !== "ms") return `${value} ${unit}`;
  return `${value < 10 ? value.toFixed(3) : value.toFixed(1)} ${unit}`;
};

export function renderTable(comparisons: readonly Comparison[]): string {
  const rows = comparisons.map((c) => [
    c.name,
    `${formatValue(c.baseline.value, c.unit)} (${c.baseline.label})`,
    `${formatValue(c.stagechart.value, c.unit)} (${c.stagechart.label})`,
    c.ratio === undefined ? "—" : `${c.ratio.toFixed(2)}×`,
  ]);
  const header = ["benchmark", "baseline", "stagechart", "ratio"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ");
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

export function renderDetails(comparisons: readonly Comparison[]): string {
  return comparisons
    .filter((c) => c.details)
    .map((c) => {
      const pairs = Object.entries(c.details ?? {}).filter(([, v]) => v !== undefined);
      return `${c.name}: ${pairs.map(([k, v]) => `${k}=${typeof v === "number" ? round(v) : v}`).join(", ")}`;
    })
    .join("\n");
}

const round = (value: number): number =>
  Number.isInteger(value) ? value : Number(value.toPrecision(4));

/** What `npm run bench` writes to `bench/results/`: the machine, every row and the goal table. */
export interface Results {
  measuredAt: string;
  machine: Machine;
  comparisons: Comparison[];
  goals: GoalResult[];
}

export function writeResults(
  file: string,
  machine: Machine,
  comparisons: readonly Comparison[],
  goals: readonly GoalResult[],
): void {
  mkdirSync(dirname(file), { recursive: true });
  const body = { measuredAt: new Date().toISOString(), machine, comparisons, goals };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
}
