import { readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { goalMarkdown, judgeGoals, otherFigures, otherMarkdown } from "./goals.js";
import type { Results } from "./report.js";

/** The benchmarks page's generated block lies between these two comments. */
const START = "<!-- bench:tables -->";
const END = "<!-- /bench:tables -->";

/** The goal table and the table of other figures of one results file, as Markdown. */
export function benchTables(results: Results, source: string): string {
  const { machine } = results;
  // Judged again from the rows, so an older results file gets today's goal table.
  const goals = judgeGoals(results.comparisons);
  return [
    `Measured ${results.measuredAt.slice(0, 10)} on ${machine.cpu} (${machine.cores} cores, ${machine.memoryGiB} GiB), Node ${machine.node}, ${machine.platform} (\`${source}\`).`,
    "",
    goalMarkdown(goals),
    "",
    "Other figures of the same run:",
    "",
    otherMarkdown(otherFigures(results.comparisons)),
  ].join("\n");
}

/**
 * Rewrites the page's block between the two markers from `resultsFiles`; returns the block. The
 * first file is the baseline; each further one (the long peer rows, or rows measured again alone)
 * puts its rows in place of the baseline's of the same name and adds the others.
 */
export function refreshReadme(resultsFiles: readonly string[], readmeFile: string): string {
  const [first, ...more] = resultsFiles.map(
    (file) => JSON.parse(readFileSync(file, "utf8")) as Results,
  );
  if (!first) throw new Error("no results file given");
  const rows = new Map(first.comparisons.map((c) => [c.name, c]));
  for (const results of more) for (const row of results.comparisons) rows.set(row.name, row);
  const results = { ...first, comparisons: [...rows.values()] };
  const source = resultsFiles.map((file) => relative(process.cwd(), file)).join("`, `");
  const tables = benchTables(results, source);
  const readme = readFileSync(readmeFile, "utf8");
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${readmeFile} has no ${START} … ${END} block`);
  writeFileSync(
    readmeFile,
    `${readme.slice(0, start + START.length)}\n${tables}\n${readme.slice(end)}`,
  );
  return tables;
}
