import { describe, expect, it } from "vitest";
import { goalMarkdown, judgeGoals, renderGoalTable } from "../../bench/goals.js";
import { type Comparison, compare } from "../../bench/report.js";

const GOAL = "`runs` over 10,000 runs as fast as over 10 (not measurably slower)";

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
  it("is met by a median over 1 whose confidence interval reaches down to 1", () => {
    expect(listingGoal([listingRow(1.004, { low: 0.999, high: 1.009 })])).toMatchObject({
      ratio: 1.004,
      interval: { low: 0.999, high: 1.009 },
      verdict: "met",
    });
  });

  it("is missed when the whole interval lies over 1: the data show the larger store slower", () => {
    expect(listingGoal([listingRow(1.006, { low: 1.001, high: 1.011 })])).toMatchObject({
      verdict: "MISSED",
    });
  });

  it("is held by the median of a row measured without an interval (an older results file)", () => {
    const old = listingGoal([listingRow(1.005)]);
    expect(old).toMatchObject({ ratio: 1.005, verdict: "MISSED" });
    expect(old).not.toHaveProperty("interval");
    expect(listingGoal([listingRow(0.998)])?.verdict).toBe("met");
  });

  it("shows the interval and what is held to the limit, in the terminal and the README", () => {
    const goals = judgeGoals([listingRow(1.004, { low: 0.999, high: 1.009 })]).filter(
      (g) => g.goal === GOAL,
    );
    expect(goalMarkdown(goals).split("\n").at(-1)).toBe(
      `| ${GOAL} | 1.300 ms (10 runs) | 1.305 ms (10000 runs) | 1.00× (95 %: 0.999–1.009) | lower end ≤ 1.00× met |`,
    );
    expect(renderGoalTable(goals)).toContain("1.00× (95 %: 0.999–1.009)  lower end ≤ 1.00×  met");
  });
});
