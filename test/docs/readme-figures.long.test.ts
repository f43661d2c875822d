import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { documentation, runCli } from "../support/cli.js";

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

  it("test --mutate on task-lifecycle, and on arena-debate with verify-identity's fixture", async () => {
    const [caught, changing, equivalent] = quoted(
      /and (\d+) of (\d+) of task-lifecycle's \((\d+) equivalent, each\s+differing only at a count of visits no run reaches\)/,
    );
    const [all, passing, paths, arenaCaught] = quoted(
      /with that fixture makes all (\d+) of its mutants, every one changing behaviour, and\s+the (\d+) of (\d+) paths that pass catch (\d+) of them/,
    );
    type Scored = {
      caught: number;
      survived: number;
      equivalent: number;
      mutants: { status: string; equivalence?: string }[];
      paths: { replayed: string[]; failing: unknown[] };
    };
    const scored = async (...argv: string[]) =>
      JSON.parse((await runCli("test", ...argv, "--json")).stdout) as Scored;
    const lifecycle = await scored("task-lifecycle", "--mutate", "1000");
    expect([lifecycle.caught, lifecycle.caught + lifecycle.survived, lifecycle.equivalent]).toEqual(
      [caught, changing, equivalent],
    );
    for (const mutant of lifecycle.mutants.filter((m) => m.status === "equivalent"))
      expect(mutant.equivalence).toMatch(
        /^it differs only where no run goes within --max-visits 5/,
      );
    const fixtures = join(mkdtempSync(join(tmpdir(), "stagechart-fixtures-")), "fixtures.json");
    writeFileSync(fixtures, '{"verify-identity": {"verdict": "ok"}}');
    const arena = await scored("arena-debate", "--fixtures", fixtures, "--mutate", "400");
    expect(arena.mutants.length).toBe(all);
    expect(arena.equivalent).toBe(0);
    expect([
      arena.paths.replayed.length,
      arena.paths.replayed.length + arena.paths.failing.length,
    ]).toEqual([passing, paths]);
    expect(arena.caught).toBe(arenaCaught);
  });

  it("test arena-debate with verify-identity's fixture", async () => {
    const [passed, total, covered, transitions] = quoted(
      /it passes (\d+) of (\d+) paths\s+\((\d+) of (\d+) transitions\)/,
    );
    const fixtures = join(mkdtempSync(join(tmpdir(), "stagechart-fixtures-")), "fixtures.json");
    writeFileSync(fixtures, '{"verify-identity": {"verdict": "ok"}}');
    const { stdout } = await runCli("test", "arena-debate", "--fixtures", fixtures, "--json");
    const report = JSON.parse(stdout) as {
      passed: number;
      failed: number;
      coverage: { transitions: { covered: number; total: number } };
    };
    expect([report.passed, report.passed + report.failed]).toEqual([passed, total]);
    expect(report.coverage.transitions).toMatchObject({ covered, total: transitions });
  });
});
