import { type Comparison, type Figure, formatValue, type GoalResult } from "./report.js";

/** One of the performance goals and the benchmark row that measures it. */
interface Goal {
  goal: string;
  /** The row measuring it: the first comparison whose name starts with this. */
  row: string;
  /** The most the ratio may be. */
  limit: number;
  /**
   * What is held to the limit, from the row and the run's other rows; the row's own baseline,
   * stagechart figure and ratio if not given.
   */
  figure?: (row: Comparison, comparisons: readonly Comparison[]) => Figure;
  /**
   * "Shown to be within the limit", for an equivalence goal ("as fast as", within a margin): met
   * when the upper end of the row's confidence interval for its ratio (details `ratioLow` and
   * `ratioHigh`) is within the limit, so a median that noise put under it is not enough. A row
   * without one (an older results file) is not measured for it.
   */
  byUpperEnd?: boolean;
  /** What the table should say beside the verdict, read from every row of the run. */
  note?: (comparisons: readonly Comparison[]) => string | undefined;
}

/** The row's confidence interval for its ratio, when it has one. */
function intervalOf(row: Comparison): Figure["interval"] {
  const low = row.details?.ratioLow;
  const high = row.details?.ratioHigh;
  return typeof low === "number" && typeof high === "number" ? { low, high } : undefined;
}

const sideOf = (row: Comparison, side: "baseline" | "stagechart"): string =>
  `${formatValue(row[side].value, row.unit)} (${row[side].label})`;

const ownFigure = (row: Comparison): Figure => ({
  baseline: sideOf(row, "baseline"),
  stagechart: sideOf(row, "stagechart"),
  ratio: row.ratio,
});

const langGraph = (kind: "durable" | "in memory", turns: number): Goal => ({
  goal: `LangGraph.js ${kind}, 3 stages × ${turns} turns: stagechart ≥ 5× faster`,
  row: `LangGraph.js ${kind} (3 stages × ${turns} turns`,
  limit: 0.2,
});

const mastra = (kind: "durable" | "in memory", turns: number): Goal => ({
  goal: `Mastra ${kind}, 3 stages × ${turns} turns: stagechart ≥ 2× faster`,
  row: `Mastra ${kind} (3 stages × ${turns} turns`,
  limit: 0.5,
});

/**
 * What a committed step adds to a stagechart run (durable less in memory, over its committed
 * steps) against what one adds at the least (the durability floor row: bare XState committing
 * a 500-byte row per step).
 */
function stepAgainstFloor(durable: Comparison, comparisons: readonly Comparison[]): Figure {
  const floor = comparisons.find((c) => c.name.startsWith("durability floor"));
  const steps = Number(durable.details?.committedStepsPerRun);
  const least = Number(floor?.details?.addedMsPerStep);
  const added = (durable.stagechart.value - durable.baseline.value) / steps;
  return {
    baseline: `${formatValue(least, "ms")} (the floor's step)`,
    stagechart: `${formatValue(added, "ms")} (a stagechart step)`,
    ratio: steps > 0 && least > 0 ? added / least : Number.NaN,
  };
}

const diskFloorOf = (comparisons: readonly Comparison[], shape: string) =>
  comparisons.find((c) => c.name.startsWith("disk floor") && c.name.includes(shape));

/** What the disk floor of the same workload writes per conversation byte, as a goal's note. */
const diskFloorNote =
  (shape: string) =>
  (comparisons: readonly Comparison[]): string | undefined => {
    const floor = diskFloorOf(comparisons, shape);
    if (!floor) return undefined;
    const ratio = floor.stagechart.value / floor.baseline.value;
    return `the conversation alone, committed a step at a time (bare XState, the store's pragmas), is written ${ratio.toFixed(2)}× over: WAL pages and the checkpoint's second copy`;
  };

/** Bytes written per conversation byte, stagechart's ÷ the disk floor's on the same workload. */
const againstDiskFloor =
  (shape: string) =>
  (row: Comparison, comparisons: readonly Comparison[]): Figure => {
    const floor = diskFloorOf(comparisons, shape);
    const least = floor ? floor.stagechart.value / floor.baseline.value : Number.NaN;
    const ours = row.stagechart.value / row.baseline.value;
    return {
      baseline: `${least.toFixed(2)}× (the floor's bytes ÷ conversation)`,
      stagechart: `${ours.toFixed(2)}× (written ÷ conversation)`,
      ratio: ours / least,
    };
  };

/**
 * About the least "durable ÷ in memory" a transaction per macrostep leaves this run
 * on this machine: its in-memory time plus, per committed step, what committing even a bare
 * 500-byte row adds (the durability floor row), over its in-memory time. An estimate from two
 * medians measured apart, not a proven bound.
 */
function leastDurableRatio(comparisons: readonly Comparison[]): string | undefined {
  const durable = comparisons.find((c) => c.name.startsWith("durability:"));
  const floor = comparisons.find((c) => c.name.startsWith("durability floor"));
  const steps = Number(durable?.details?.committedStepsPerRun);
  const added = Number(floor?.details?.addedMsPerStep);
  if (!durable || !(steps > 0) || !(added > 0)) return undefined;
  const least = 1 + (steps * added) / durable.baseline.value;
  return (
    `a transaction per macrostep alone, at the floor's ${formatValue(added, "ms")} a step ` +
    `(bare XState committing a 500-byte row), puts this run at about ${least.toFixed(2)}× already`
  );
}

/** The performance goals; each limit is on stagechart ÷ baseline. */
export const GOALS: readonly Goal[] = [
  {
    goal: "parallel group of 1,000 siblings (16 at once): a sibling ≤ 2× a chain's stage",
    row: "parallel group",
    limit: 2,
  },
  {
    goal: "map group of 1,000 items (16 at once): an item ≤ 2× a chain's stage",
    row: "map group",
    limit: 2,
  },
  {
    goal: "a chained stage costs the same at 5,000 stages as at 100 (≤ 1.2×)",
    row: "growth: a chained stage",
    limit: 1.2,
  },
  {
    goal: "a parallel sibling costs the same at 5,000 siblings as at 100 (≤ 1.2×)",
    row: "growth: a parallel sibling",
    limit: 1.2,
  },
  {
    goal: "durable: a chained stage costs the same at 5,000 stages as at 100 (≤ 1.2×)",
    row: "durable growth: a chained stage",
    limit: 1.2,
  },
  {
    goal: "durable: a stage's stored bytes the same at 5,000 stages as at 100 (≤ 1.2×)",
    row: "durable growth: bytes stored per stage",
    limit: 1.2,
  },
  {
    goal: "durable: 5,000 parallel siblings finish, each costing what one of 100 does (≤ 1.2×)",
    row: "durable growth: a parallel sibling",
    limit: 1.2,
  },
  {
    goal: "durable: a sibling's stored bytes the same at 5,000 siblings as at 100 (≤ 1.2×)",
    row: "durable growth: bytes stored per sibling",
    limit: 1.2,
  },
  {
    goal: "compiling a 1,000-stage pipeline under 1 s",
    row: "compiling",
    limit: 1,
    figure: (row) => ({
      baseline: "1 s (goal)",
      stagechart: sideOf(row, "stagechart"),
      ratio: row.stagechart.value / 1000,
    }),
  },
  {
    goal: "opening a stored run of ~1,000 audit events in Chromium under 1 s",
    row: "open a stored run in Chromium,",
    limit: 1,
    figure: (row) => ({
      baseline: "1 s (goal)",
      stagechart: sideOf(row, "stagechart"),
      ratio: row.stagechart.value / 1000,
    }),
  },
  {
    goal: "compiled machines cached per definition: a run's machine costs less than compiling it",
    row: "compiling",
    limit: 1,
    figure: (row) => {
      const cached = Number(row.details?.cachedMs);
      return {
        baseline: `${formatValue(row.stagechart.value, "ms")} (compiled)`,
        stagechart: `${formatValue(cached, "ms")} (cached)`,
        ratio: cached / row.stagechart.value,
      };
    },
  },
  {
    goal: "time per turn flat: turn 2000 ≤ 1.2× turn 1, in memory",
    row: "time per turn, turn 2000 against turn 1 (in memory)",
    limit: 1.2,
  },
  {
    goal: "time per turn flat: turn 2000 ≤ 1.2× turn 1, durable",
    row: "time per turn, turn 2000 against turn 1 (durable)",
    limit: 1.2,
  },
  { goal: "engine overhead ≤ 1.5× bare XState (in memory)", row: "engine overhead", limit: 1.5 },
  {
    goal: "streaming adds ≤ 10 % to a run's CPU, every piece read",
    row: "streaming:",
    limit: 1.1,
    note: (comparisons) => {
      const row = comparisons.find((c) => c.name.startsWith("streaming:"));
      const alone = Number(row?.details?.streamsAloneRatio);
      if (!(alone > 0)) return undefined;
      return `the replies' streams alone (made and read, nothing else: Node's web streams) put a run at ${alone.toFixed(2)}×`;
    },
  },
  { goal: "durable ≤ 1.5× in memory", row: "durability:", limit: 1.5, note: leastDurableRatio },
  {
    goal: "a committed step adds ≤ 2× what the floor's step adds",
    row: "durability:",
    limit: 2,
    figure: stepAgainstFloor,
  },
  {
    goal: "one transaction per step, journal and transcripts included",
    row: "store transactions per committed step",
    limit: 1,
  },
  {
    goal: "PostgreSQL: a committed step in ≤ 3 round trips",
    row: "PostgreSQL: ms per committed step",
    limit: 1,
    figure: (row) => {
      const most = Number(row.details?.mostStatementsInACommit);
      const mean = Number(row.details?.statementsPerCommit);
      return {
        baseline: "3 round trips (goal)",
        stagechart: `${most} at most (${mean.toFixed(2)} on average)`,
        ratio: most / 3,
      };
    },
  },
  {
    goal: "PostgreSQL: a step ≤ 2× SQLite's time",
    row: "PostgreSQL: ms per committed step",
    limit: 2,
  },
  {
    goal: "disk bytes ≤ 3× the conversation (5 kB outputs)",
    row: "write amplification: bytes the process wrote to disk (/proc wchar), 3×20",
    limit: 3,
    note: diskFloorNote("3×20"),
  },
  {
    goal: "disk bytes ≤ 3× the conversation (1 kB outputs)",
    row: "write amplification: bytes the process wrote to disk (/proc wchar), 3×10",
    limit: 3,
    note: diskFloorNote("3×10"),
  },
  {
    goal: "disk bytes ≤ 2× the floor's (the conversation committed a step at a time), 5 kB outputs",
    row: "write amplification: bytes the process wrote to disk (/proc wchar), 3×20",
    limit: 2,
    figure: againstDiskFloor("3×20"),
  },
  {
    goal: "disk bytes ≤ 2× the floor's (the conversation committed a step at a time), 1 kB outputs",
    row: "write amplification: bytes the process wrote to disk (/proc wchar), 3×10",
    limit: 2,
    figure: againstDiskFloor("3×10"),
  },
  {
    goal: "`stagechart --version` ≤ 2× `node -e 0`",
    row: "start-up: stagechart --version",
    limit: 2,
  },
  {
    goal: "`validate` of the bundled files ≤ 2.5× `node -e 0`",
    row: "start-up: stagechart validate",
    limit: 2.5,
  },
  // Both listings print the same 10 rows; the larger file's index is only deeper (3 more page
  // reads in one descent: no B-tree is as shallow over 10,000 runs as over 10). The goal is the
  // command a user runs: its process over 10 runs, plus what the listing over 10,000 adds, timed
  // in process (`bench/cases/runs-listing.ts`). "As fast as" is an equivalence within 1 %: the
  // upper end of the 95 % confidence interval.
  {
    goal: "`runs` over 10,000 runs as fast as over 10 (within 1 %)",
    row: "runs --json over",
    limit: 1.01,
    byUpperEnd: true,
  },
  {
    goal: "heap per finished run ≤ 2× bare XState (3×20 turns, 5 kB outputs)",
    row: "memory: heap held per finished run (3×20",
    limit: 2,
  },
  {
    goal: "heap per finished run ≤ 2× bare XState (3×10 turns, 1 kB outputs)",
    row: "memory: heap held per finished run (3×10",
    limit: 2,
  },
  {
    goal: "a suspended run ≤ 50 KiB once its handle is dropped",
    row: "memory: a suspended run once its handle is dropped",
    limit: 1,
  },
  {
    goal: "a suspended run's kept handle does not keep the stopped actor tree (≤ 50 KiB)",
    row: "memory: a suspended run whose handle is kept",
    limit: 1,
  },
  langGraph("durable", 10),
  langGraph("in memory", 10),
  langGraph("durable", 100),
  langGraph("in memory", 100),
  langGraph("durable", 1000),
  langGraph("in memory", 1000),
  mastra("durable", 10),
  mastra("in memory", 10),
  mastra("durable", 100),
  mastra("in memory", 100),
  mastra("durable", 1000),
  mastra("in memory", 1000),
];

/** Every goal against the rows of one benchmark run. */
export function judgeGoals(comparisons: readonly Comparison[]): GoalResult[] {
  return GOALS.map(({ goal, row: prefix, limit, figure = ownFigure, byUpperEnd, note }) => {
    const row = comparisons.find((c) => c.name.startsWith(prefix));
    if (!row)
      return {
        goal,
        limit,
        baseline: "—",
        stagechart: "—",
        ratio: undefined,
        verdict: "not measured",
      };
    const interval = byUpperEnd ? intervalOf(row) : undefined;
    if (byUpperEnd && !interval)
      return { goal, limit, ...figure(row, comparisons), verdict: "not measured" as const };
    const measured = { ...figure(row, comparisons), ...(interval && { interval }) };
    const held = interval ? interval.high : measured.ratio;
    const met = held !== undefined && Number.isFinite(held) && held <= limit;
    const said = note?.(comparisons);
    return {
      goal,
      limit,
      ...measured,
      verdict: met ? "met" : "MISSED",
      ...(said && { note: said }),
    };
  });
}

/** The rows no goal reads: the other figures of a benchmark run. */
export const otherFigures = (comparisons: readonly Comparison[]): Comparison[] =>
  comparisons.filter((c) => !GOALS.some((goal) => c.name.startsWith(goal.row)));

const ratioCell = (ratio: number | undefined): string =>
  ratio === undefined || !Number.isFinite(ratio) ? "—" : `${ratio.toFixed(2)}×`;

/** A goal's ratio, with its confidence interval when it is held by that. */
const goalRatioCell = ({ ratio, interval }: GoalResult): string =>
  interval
    ? `${ratioCell(ratio)} (95 %: ${interval.low.toFixed(3)}–${interval.high.toFixed(3)})`
    : ratioCell(ratio);

const limitCell = ({ limit, interval }: GoalResult): string =>
  `${interval ? "upper end " : ""}≤ ${limit.toFixed(2)}×`;

/** The goal table for the terminal: goal, baseline, stagechart, ratio, limit and verdict. */
export function renderGoalTable(goals: readonly GoalResult[]): string {
  const rows = goals.map((g) => [
    g.goal,
    g.baseline,
    g.stagechart,
    goalRatioCell(g),
    limitCell(g),
    g.verdict,
  ]);
  const header = ["goal", "baseline", "stagechart", "ratio", "limit", ""];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  const table = [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)];
  return [...table, ...notesOf(goals).map((note) => `  ${note}`)].join("\n");
}

/** The goals' notes, each after the goal it is about. */
const notesOf = (goals: readonly GoalResult[]): string[] =>
  goals.flatMap((g) => (g.note ? [`${g.goal}: ${g.note}.`] : []));

const markdownRow = (cells: readonly string[]): string => `| ${cells.join(" | ")} |`;

/** The goal table as Markdown, for the benchmarks page. */
export const goalMarkdown = (goals: readonly GoalResult[]): string =>
  [
    markdownRow(["goal", "baseline", "stagechart", "ratio", "goal"]),
    markdownRow(["---", "---", "---", "---", "---"]),
    ...goals.map((g) =>
      markdownRow([
        g.goal,
        g.baseline,
        g.stagechart,
        goalRatioCell(g),
        `${limitCell(g)} ${g.verdict}`,
      ]),
    ),
    ...notesOf(goals).map((note, i) => `${i === 0 ? "\n" : ""}- ${note}`),
  ].join("\n");

/** The other figures as Markdown, for the benchmarks page. */
export const otherMarkdown = (comparisons: readonly Comparison[]): string =>
  [
    markdownRow(["benchmark", "baseline", "stagechart", "ratio"]),
    markdownRow(["---", "---", "---", "---"]),
    ...comparisons.map((c) =>
      markdownRow([c.name, sideOf(c, "baseline"), sideOf(c, "stagechart"), ratioCell(c.ratio)]),
    ),
  ].join("\n");
