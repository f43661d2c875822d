import { describe, expect, it } from "vitest";
import { goalMarkdown, judgeGoals, renderGoalTable } from "../../bench/goals.js";
import { type Comparison, compare } from "../../bench/report.js";

const GOAL = "`runs` over 10,000 runs as fast as over 10 (within 1 %)";

/** The listing row as the runs-listing case writes it: the median ratio and its interval. */
function listingRow(median: number, interval?: { low: number; high: number }): Comparison {
  const row = compare(
    "runs --json over 10000 stored runs",
    "ms",
    { label: "10 runs", value: 1.3 },
    { label: "10000 runs", value: 1.3 * median },
    interval && { rounds: 1601, ratioLow: interval.low, ratioHigh: interval.high },
  );
  return { ...row, ratio: median };
}

const listingGoal = (rows: Comparison[]) => judgeGoals(rows).find((g) => g.goal === GOAL);

describe("the runs listing's goal", () => {
  it("is met when the whole confidence interval lies within 1 % over the smaller store", () => {
    expect(listingGoal([listingRow(1.004, { low: 0.999, high: 1.009 })])).toMatchObject({
      ratio: 1.004,
      interval: { low: 0.999, high: 1.009 },
      verdict: "met",
    });
  });

  it("is missed when the interval reaches past 1 %, even with a median under it", () => {
    expect(listingGoal([listingRow(1.006, { low: 1.001, high: 1.011 })])).toMatchObject({
      verdict: "MISSED",
    });
    expect(listingGoal([listingRow(0.99, { low: 0.95, high: 1.03 })])?.verdict).toBe("MISSED");
  });

  it("is not measured by a row without an interval (an older results file)", () => {
    const old = listingGoal([listingRow(1.005)]);
    expect(old).toMatchObject({ ratio: 1.005, verdict: "not measured" });
    expect(old).not.toHaveProperty("interval");
  });

  it("shows the interval and what is held to the limit, in the terminal and the README", () => {
    const goals = judgeGoals([listingRow(1.004, { low: 0.999, high: 1.009 })]).filter(
      (g) => g.goal === GOAL,
    );
    expect(goalMarkdown(goals).split("\n").at(-1)).toBe(
      `| ${GOAL} | 1.300 ms (10 runs) | 1.305 ms (10000 runs) | 1.00× (95 %: 0.999–1.009) | upper end ≤ 1.01× met |`,
    );
    expect(renderGoalTable(goals)).toContain("1.00× (95 %: 0.999–1.009)  upper end ≤ 1.01×  met");
  });
});

describe("the durability goal's note", () => {
  const durability = compare(
    "durability: 3 stages × 10 turns, per run",
    "ms",
    { label: "in memory", value: 3.2 },
    { label: "SQLite WAL", value: 18.4 },
    { committedStepsPerRun: 64 },
  );
  const floor = compare(
    "durability floor: bare XState with a SQLite transaction per step, 3 stages × 10 turns",
    "ms",
    { label: "bare XState in memory", value: 1.4 },
    { label: "+ a commit per step", value: 3.3 },
    { addedMsPerStep: 0.033 },
  );
  const durableGoal = (rows: Comparison[]) =>
    judgeGoals(rows).find((g) => g.goal === "durable ≤ 1.5× in memory");

  it("gives about the least ratio the floor's commit per step leaves the run: 1 + 64 × 0.033 / 3.2", () => {
    const goal = durableGoal([durability, floor]);
    expect(goal?.note).toContain("about 1.66× already");
    expect(renderGoalTable(goal ? [goal] : [])).toContain("about 1.66× already");
    expect(goalMarkdown(goal ? [goal] : [])).toContain(
      "\n- durable ≤ 1.5× in memory: a transaction",
    );
  });

  it("says nothing without the floor row", () => {
    expect(durableGoal([durability])).not.toHaveProperty("note");
  });
});

describe("the Mastra goals", () => {
  /** A Mastra row as the case names it, stagechart taking `ratio` of Mastra's time. */
  const mastraRow = (kind: string, turns: number, ratio: number): Comparison =>
    compare(
      `Mastra ${kind} (3 stages × ${turns} turns, 1 kB tool outputs), per run`,
      "ms",
      { label: `Mastra + ${kind === "durable" ? "LibSQLStore" : "InMemoryStore"}`, value: 100 },
      { label: kind, value: 100 * ratio },
    );
  const verdicts = (rows: Comparison[]) =>
    judgeGoals(rows)
      .filter((g) => g.goal.startsWith("Mastra"))
      .map((g) => `${g.goal}: ${g.verdict}`);

  it("hold stagechart to half Mastra's time, durable and in memory, at 10, 100 and 1,000 turns", () => {
    const rows = [10, 100, 1000].flatMap((turns) => [
      mastraRow("durable", turns, turns === 10 ? 0.55 : 0.45),
      mastraRow("in memory", turns, 0.5),
    ]);
    expect(verdicts(rows)).toEqual([
      "Mastra durable, 3 stages × 10 turns: stagechart ≥ 2× faster: MISSED",
      "Mastra in memory, 3 stages × 10 turns: stagechart ≥ 2× faster: met",
      "Mastra durable, 3 stages × 100 turns: stagechart ≥ 2× faster: met",
      "Mastra in memory, 3 stages × 100 turns: stagechart ≥ 2× faster: met",
      "Mastra durable, 3 stages × 1000 turns: stagechart ≥ 2× faster: met",
      "Mastra in memory, 3 stages × 1000 turns: stagechart ≥ 2× faster: met",
    ]);
  });

  it("are not measured without the Mastra rows", () => {
    expect(
      new Set(
        judgeGoals([])
          .filter((g) => g.goal.startsWith("Mastra"))
          .map((g) => g.verdict),
      ),
    ).toEqual(new Set(["not measured"]));
  });
});
