import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { documentation, REPO_ROOT, runCli } from "../support/cli.js";

/**
 * Every figure the README quotes from a command's output is the command's output today: each
 * check runs the command and reads the README's sentence, so neither can change alone. A sentence
 * reworded so its pattern no longer matches fails here too, and is then checked anew.
 */
const README = documentation();

/** The numbers the README's sentence matching `pattern` holds (its capture groups). */
function quoted(pattern: RegExp): number[] {
  const match = README.match(pattern);
  if (!match) throw new Error(`README no longer says ${pattern}`);
  return match.slice(1).map(Number);
}

async function pathCount(...argv: string[]): Promise<number> {
  const { code, stdout, stderr } = await runCli("paths", ...argv, "--json");
  expect(code, stderr).toBe(0);
  return (JSON.parse(stdout) as { paths: unknown[] }).paths.length;
}

interface TestSummary {
  passed: number;
  failed: number;
  coverage: { transitions: { covered: number; total: number } };
}

async function testSummary(...argv: string[]): Promise<TestSummary> {
  const { stdout } = await runCli("test", ...argv, "--json");
  return JSON.parse(stdout) as TestSummary;
}

describe("the README's figures, as the commands print them", () => {
  it("paths arena-debate", async () => {
    const [count] = quoted(/`stagechart paths arena-debate` lists (\d+) shortest paths/);
    expect(await pathCount("arena-debate")).toBe(count);
  });

  it("paths code-review and code-review-parallel: shortest, simple, with control events", async () => {
    const [shortest, simple, events, pShortest, pSimple, pEvents] = quoted(
      /have (\d+) shortest paths \((\d+) simple; (\d+) with every control event\) for\s+`code-review`, and (\d+) shortest \((\d+) simple; (\d+) with the control events\) for\s+`code-review-parallel`/,
    );
    const controls = ["--events", "override,redo,cancel"];
    expect(await pathCount("code-review")).toBe(shortest);
    expect(await pathCount("code-review", "--strategy", "simple")).toBe(simple);
    expect(await pathCount("code-review", ...controls)).toBe(events);
    expect(await pathCount("code-review-parallel")).toBe(pShortest);
    expect(await pathCount("code-review-parallel", "--strategy", "simple")).toBe(pSimple);
    expect(await pathCount("code-review-parallel", ...controls)).toBe(pEvents);
  });

  it("the printed paths of code-review-parallel", async () => {
    const block = README.match(/\$ stagechart paths code-review-parallel\n([\s\S]*?)\n```/)?.[1];
    if (!block) throw new Error("README no longer shows `stagechart paths code-review-parallel`");
    const { stdout } = await runCli("paths", "code-review-parallel");
    const printed = stdout.trim().split("\n");
    for (const line of block.split("\n").filter((l) => l !== "…")) expect(printed).toContain(line);
  });

  it("paths task-lifecycle", async () => {
    const [count] = quoted(/task-lifecycle has (\d+) shortest paths/);
    expect(await pathCount("task-lifecycle")).toBe(count);
  });

  it("test's transition coverage of code-review and code-review-parallel, by the paths that cover them", async () => {
    const [covered, total, paths, pCovered, pTotal, pPaths] = quoted(
      /covers `code-review`'s (\d+) of (\d+) transitions with (\d+) paths,\s+`code-review-parallel`'s (\d+) of (\d+) with (\d+) paths/,
    );
    const review = await testSummary("code-review");
    expect([
      review.passed,
      review.failed,
      review.coverage.transitions.covered,
      review.coverage.transitions.total,
    ]).toEqual([paths, 0, covered, total]);
    const parallel = await testSummary("code-review-parallel");
    expect([
      parallel.passed,
      parallel.failed,
      parallel.coverage.transitions.covered,
      parallel.coverage.transitions.total,
    ]).toEqual([pPaths, 0, pCovered, pTotal]);
  });

  it("test --mutate on code-review, code-review-parallel and the pi-workflows example: mutants caught and equivalent", async () => {
    const [caught, changing, equivalent, pCaught, pChanging, pEquivalent] = quoted(
      /catches (\d+) of (\d+) of\s+`code-review`'s mutants that change behaviour \((\d+) equivalent\), (\d+) of (\d+) of\s+`code-review-parallel`'s \((\d+) equivalent\)/,
    );
    const [rCaught, rChanging] = quoted(/release --mutate 100 +# (\d+) of (\d+) mutants caught/);
    const scored = async (...argv: string[]) => {
      const { stdout } = await runCli("test", ...argv, "--mutate", "1000", "--json");
      const report = JSON.parse(stdout) as { caught: number; survived: number; equivalent: number };
      return [report.caught, report.caught + report.survived, report.equivalent];
    };
    expect(await scored("code-review")).toEqual([caught, changing, equivalent]);
    expect(await scored("code-review-parallel")).toEqual([pCaught, pChanging, pEquivalent]);
    expect((await scored("machines/pi-release/release")).slice(0, 2)).toEqual([rCaught, rChanging]);
  });

  it("test on the pi-workflows example: paths passed and transitions covered", async () => {
    const [releasePassed, releaseCovered, releaseTotal] = quoted(
      /stagechart test machines\/pi-release\/release\s+# (\d+) paths pass; (\d+) of (\d+) transitions/,
    );
    const release = await testSummary("machines/pi-release/release");
    expect([release.passed, release.failed]).toEqual([releasePassed, 0]);
    expect(release.coverage.transitions).toMatchObject({
      covered: releaseCovered,
      total: releaseTotal,
    });
    const [reviewPassed, reviewCovered, reviewTotal] = quoted(
      /`test machines\/pi-release\/code-review`: (\d+) paths, (\d+) of (\d+) transitions/,
    );
    const review = await testSummary("machines/pi-release/code-review");
    expect([review.passed, review.failed]).toEqual([reviewPassed, 0]);
    expect(review.coverage.transitions).toMatchObject({
      covered: reviewCovered,
      total: reviewTotal,
    });
  });

  it("test arena-debate, alone and with its bundled fixtures: paths passed and transitions covered", async () => {
    const [alonePassed, aloneTotal, aloneCovered, aloneTransitions] = quoted(
      /Alone, it passes (\d+) of\s+its (\d+) paths \((\d+) of (\d+) transitions\)/,
    );
    const alone = await testSummary("arena-debate");
    expect([alone.passed, alone.passed + alone.failed]).toEqual([alonePassed, aloneTotal]);
    expect(alone.coverage.transitions).toMatchObject({
      covered: aloneCovered,
      total: aloneTransitions,
    });
    const [passed, total, covered, transitions] = quoted(
      /passes all (\d+) of its (\d+) paths \((\d+) of (\d+) transitions\)/,
    );
    const fixtures = join(REPO_ROOT, "machines/arena-debate.fixtures.json");
    const fixed = await testSummary("arena-debate", "--fixtures", fixtures);
    expect([fixed.passed, fixed.passed + fixed.failed]).toEqual([passed, total]);
    expect(fixed.coverage.transitions).toMatchObject({ covered, total: transitions });
  });
});
