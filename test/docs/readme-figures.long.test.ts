import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { documentation, REPO_ROOT, runCli } from "../support/cli.js";

/** The README's figures whose commands take too long for the default suite (readme-figures.test.ts has the rest). */
const README = documentation();

function quoted(pattern: RegExp): number[] {
  const match = README.match(pattern);
  if (!match) throw new Error(`README no longer says ${pattern}`);
  return match.slice(1).map(Number);
}

describe("the README's long figures, as the commands print them", () => {
  it("paths task-lifecycle --max-visits 5", async () => {
    const [count] = quoted(/`--max-visits 5` gives (\d+) paths/);
    const { code, stdout } = await runCli("paths", "task-lifecycle", "--max-visits", "5", "--json");
    expect(code).toBe(0);
    expect((JSON.parse(stdout) as { paths: unknown[] }).paths.length).toBe(count);
  });

  it("test's transition coverage of task-lifecycle, and the reason for the one it leaves", async () => {
    const [covered, total, paths, bound, higher] = quoted(
      /task-lifecycle's (\d+) of (\d+) with (\d+) paths,\s+its `accept → failed` \(no rule holds, because the phase the answer names was already entered 5\s+times\) `beyond --max-visits (\d+): a path takes it with --max-visits (\d+)`/,
    );
    const { stdout } = await runCli("test", "task-lifecycle", "--json");
    const report = JSON.parse(stdout) as {
      passed: number;
      failed: number;
      coverage: {
        transitions: {
          covered: number;
          total: number;
          uncovered: { transition: string; reason: string }[];
        };
      };
    };
    expect([report.passed, report.failed]).toEqual([paths, 0]);
    expect(report.coverage.transitions).toEqual({
      covered,
      total,
      uncovered: [
        {
          transition:
            "task-lifecycle.accept -> task-lifecycle.failed [xstate.done.actor.accept: failed]",
          reason: `beyond --max-visits ${bound}: a path takes it with --max-visits ${higher}`,
        },
      ],
    });
  });

  it("test task-lifecycle --max-visits 5 covers the transition the default bound leaves", async () => {
    const [bound, covered, total, paths] = quoted(
      /`stagechart test\s+task-lifecycle --max-visits (\d+)` covers (\d+) of (\d+) with (\d+) paths/,
    );
    const { stdout } = await runCli("test", "task-lifecycle", "--max-visits", `${bound}`, "--json");
    const report = JSON.parse(stdout) as {
      passed: number;
      failed: number;
      coverage: { transitions: { covered: number; total: number; uncovered: unknown[] } };
    };
    expect([report.passed, report.failed]).toEqual([paths, 0]);
    expect(report.coverage.transitions).toEqual({ covered, total, uncovered: [] });
  });

  it("test --mutate on task-lifecycle", async () => {
    const [caught, changing, equivalent] = quoted(
      /and (\d+) of (\d+) of task-lifecycle's \((\d+) equivalent, each\s+differing only at a count of visits no run reaches\)/,
    );
    const { stdout } = await runCli("test", "task-lifecycle", "--mutate", "1000", "--json");
    const lifecycle = JSON.parse(stdout) as {
      caught: number;
      survived: number;
      equivalent: number;
      mutants: { status: string; equivalence?: string }[];
    };
    expect([lifecycle.caught, lifecycle.caught + lifecycle.survived, lifecycle.equivalent]).toEqual(
      [caught, changing, equivalent],
    );
    for (const mutant of lifecycle.mutants.filter((m) => m.status === "equivalent"))
      expect(mutant.equivalence).toMatch(
        /^it differs only where no run goes within --max-visits 5/,
      );
  });

  it("test --mutate on arena-debate with its bundled fixtures", async () => {
    const [mutants, caught] = quoted(
      /`--mutate 400` makes all (\d+) of its\s+mutants, every one changing behaviour, of which the paths catch (\d+)/,
    );
    const fixtures = join(REPO_ROOT, "machines/arena-debate.fixtures.json");
    const argv = ["arena-debate", "--fixtures", fixtures, "--mutate", "400", "--json"];
    const scored = JSON.parse((await runCli("test", ...argv)).stdout) as {
      caught: number;
      equivalent: number;
      mutants: unknown[];
      paths: { failing: unknown[] };
    };
    expect(scored.paths.failing).toEqual([]);
    expect([scored.mutants.length, scored.equivalent, scored.caught]).toEqual([mutants, 0, caught]);
  });
});
