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
