import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, runCli, runCliOn } from "../support/cli.js";
import { essayFile } from "../support/essay-pipeline.js";
import { MACHINES_DIR, project } from "../support/pipeline-files.js";

type PathsJson = {
  pipelineId: string;
  strategy: string;
  paths: { id: string; steps: { stage: string; outcome: string }[]; end: string }[];
};
type TestJson = {
  passed: number;
  failed: number;
  paths: {
    id: string;
    ok: boolean;
    expected: { end: string };
    actual: { end: string };
    reason?: string;
  }[];
  coverage: {
    transitions: {
      covered: number;
      total: number;
      uncovered: { transition: string; reason: string }[];
    };
  };
};

/** A fresh copy of a bundled pipeline (with the bundled stages), edited by `edit`. */
function pipelineCopy(name: string, edit: (yaml: string) => string = (y) => y): string {
  const yaml = readFileSync(join(MACHINES_DIR, `${name}.yaml`), "utf8");
  const dir = project({ [`machines/${name}.yaml`]: edit(yaml) });
  return join(dir, "machines", `${name}.yaml`);
}

describe("stagechart paths", () => {
  it("lists, for code-review-parallel, a fail-fast sibling failure ending failed and a path ending done", async () => {
    const { code, stdout } = await runCli("paths", "code-review-parallel", "--json");
    expect(code).toBe(0);
    const list = JSON.parse(stdout) as PathsJson;
    expect(list).toMatchObject({ pipelineId: "code-review-parallel", strategy: "shortest" });
    const siblingFailure = list.paths.find(
      (p) =>
        p.end === "failed" &&
        p.steps.at(-1)?.stage === "test" &&
        p.steps.at(-1)?.outcome === "retries-exhausted",
    );
    expect(siblingFailure?.steps.map((s) => s.stage)).toEqual(["plan", "execute", "test"]);
    expect(list.paths.some((p) => p.end === "done")).toBe(true);
    expect(new Set(list.paths.map((p) => p.end))).toEqual(new Set(["done", "failed", "suspended"]));
  });

  it("takes a strategy, a visits bound and control events; refuses unknown ones", async () => {
    const count = async (...flags: string[]) =>
      (JSON.parse((await runCli("paths", "code-review", "--json", ...flags)).stdout) as PathsJson)
        .paths.length;
    expect(await count("--strategy", "simple")).toBeGreaterThan(await count());
    expect(await count("--max-visits", "1")).toBeLessThan(await count());
    expect(await count("--events", "cancel")).toBeGreaterThan(await count());
    const refused = await runCli("paths", "code-review", "--events", "pause");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("unknown pause");
  });

  it("with --cover transitions, lists as few paths as take every transition, and says why one is not taken", async () => {
    const essay = essayFile();
    const { code, stdout } = await runCli(
      "paths",
      essay,
      "--cover",
      "transitions",
      "--max-visits",
      "1",
    );
    expect(code).toBe(0);
    const lines = stdout.trim().split("\n");
    expect(lines).toContain(
      "  no path takes essay.draft -> essay.failed [xstate.done.actor.draft: otherwise]: beyond --max-visits 1: a path takes it with --max-visits 3",
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^\d+ paths \(covering its transitions\) through essay$/),
    );
    const json = JSON.parse(
      (await runCli("paths", essay, "--cover", "transitions", "--json")).stdout,
    );
    expect(json).toMatchObject({ cover: "transitions", untaken: [] });
    expect((await runCli("paths", essay, "--cover", "edges")).code).toBe(2);
  });
});

describe("stagechart test", () => {
  it("drives by default paths that take every transition: all of the essay's, its retries running out among them", async () => {
    const { code, stdout } = await runCli("test", essayFile(), "--json");
    const report = JSON.parse(stdout) as TestJson;
    expect(code).toBe(0);
    expect(report.failed).toBe(0);
    expect(report.coverage.transitions.uncovered).toEqual([]);
    const states = JSON.parse(
      (await runCli("test", essayFile(), "--cover", "states", "--json")).stdout,
    ) as TestJson;
    expect(states.coverage.transitions.uncovered.map((u) => u.transition)).toContain(
      "essay.draft -> essay.failed [xstate.done.actor.draft: failed]",
    );
  });

  it("with --mutate, scores the paths: a line per mutant, the share caught, the same mutants for the same seed", async () => {
    const essay = essayFile();
    const { code, stdout } = await runCli("test", essay, "--mutate", "12", "--seed", "3");
    expect(code).toBe(0);
    const lines = stdout.trim().split("\n");
    expect(lines.filter((l) => /^(caught|survived|equivalent) m-\d+ /.test(l))).toHaveLength(12);
    expect(lines).toContainEqual(expect.stringMatching(/^caught m-\d+ .+: by path-\d+: .+/));
    expect(lines).toContainEqual(expect.stringMatching(/^paths replayed: (\d+) of \1$/));
    expect(lines.at(-1)).toMatch(
      /^mutation score: (\d+) of \1 mutants that change behaviour caught \(100%\); \d+ equivalent \(seed 3\)$/,
    );
    const json = JSON.parse(
      (await runCli("test", essay, "--mutate", "12", "--seed", "3", "--json")).stdout,
    );
    const described = json.mutants.map(
      (m: { status: string; id: string; description: string }) =>
        `${m.status} ${m.id} ${m.description}: `,
    );
    expect(described.map((prefix: string, i: number) => lines[i]?.startsWith(prefix))).toEqual(
      described.map(() => true),
    );
    expect((await runCli("test", essay, "--mutate", "0")).code).toBe(2);
  });

  for (const name of ["code-review", "code-review-parallel"]) {
    it(`drives ${name} down every path and covers every transition`, async () => {
      const { code, stdout } = await runCli("test", name, "--json");
      const report = JSON.parse(stdout) as TestJson;
      expect(report.failed).toBe(0);
      expect(report.passed).toBe(report.paths.length);
      expect(report.coverage.transitions.uncovered).toEqual([]);
      expect(report.coverage.transitions.covered).toBe(report.coverage.transitions.total);
      expect(code).toBe(0);
    });
  }

  it("drives the control events it is asked for, and refuses unknown ones", async () => {
    const { code, stdout } = await runCli("test", "code-review", "--events", "cancel", "--json");
    const report = JSON.parse(stdout) as TestJson;
    expect(report.failed).toBe(0);
    expect(report.paths.some((p) => p.expected.end === "cancelled")).toBe(true);
    expect(report.paths.filter((p) => p.actual.end === "cancelled")).toHaveLength(
      report.paths.filter((p) => p.expected.end === "cancelled").length,
    );
    expect(code).toBe(0);
    const refused = await runCli("test", "code-review", "--events", "pause");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("unknown pause");
  });

  it("drives a command stage with the outcome a --fixtures file gives it, one for all paths or one per outcome, and refuses a bad file", async () => {
    const edited = pipelineCopy("code-review", (yaml) =>
      yaml
        .replace(
          "  review: { file: ../stages/review.md }",
          '  review: { file: ../stages/review.md }\n  check: { run: "git status" }',
        )
        .replace("  execute: review", "  execute: check\n  check: review"),
    );
    const dir = project({
      "fixtures.json": JSON.stringify({ check: { verdict: "ok", output: { passed: 3 } } }),
      "by-outcome.json": JSON.stringify({
        check: { ok: { verdict: "ok", output: { passed: 3 } }, fail: { verdict: "fail" } },
      }),
      "bad.json": JSON.stringify({ check: { verdict: "maybe" } }),
    });
    const passes = (report: TestJson) =>
      report.paths.filter((p) => p.ok && p.expected.end === "done").length;
    const real = JSON.parse((await runCli("test", edited, "--json")).stdout) as TestJson;
    expect(passes(real)).toBe(0);
    expect(real.paths.map((p) => p.reason)).toContainEqual(
      expect.stringMatching(
        /^not driven: step 3: check is a command stage whose outcome no script forces; give it a fixture; step 3 \(check: ok\): check ended fail \(.+\), not ok$/,
      ),
    );
    const fixed = JSON.parse(
      (await runCli("test", edited, "--fixtures", join(dir, "fixtures.json"), "--json")).stdout,
    ) as TestJson;
    expect(passes(fixed)).toBeGreaterThan(0);
    const byOutcome = await runCli("test", edited, "--fixtures", join(dir, "by-outcome.json"));
    expect({
      code: byOutcome.code,
      summary: byOutcome.stdout.match(/\d+ passed, \d+ failed/)?.[0],
    }).toEqual({ code: 0, summary: expect.stringMatching(/ 0 failed$/) });
    expect((await runCli("test", "--help")).stdout).toMatch(/--fixtures[\s\S]*"ok":\s+\{"verdict"/);
    const bad = await runCli("test", edited, "--fixtures", join(dir, "bad.json"));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("Validation/FixturesFileInvalid");
  });

  it("fails a saved path list where the pipeline has changed since", async () => {
    const saved = join(project({}), "paths.json");
    writeFileSync(saved, (await runCli("paths", "code-review", "--json")).stdout);
    const edited = pipelineCopy("code-review", (yaml) =>
      yaml.replace(
        "{ path: output.approved, equals: true }, to: done",
        "{ path: output.approved, equals: true }, to: fail",
      ),
    );
    const { code, stdout } = await runCli("test", edited, "--paths", saved, "--json");
    const report = JSON.parse(stdout) as TestJson;
    expect(code).toBe(1);
    const broken = report.paths.filter((p) => !p.ok);
    expect(broken.length).toBeGreaterThan(0);
    expect(broken.every((p) => p.expected.end === "done" && p.actual.end === "failed")).toBe(true);
    const unchanged = await runCli("test", pipelineCopy("code-review"), "--paths", saved);
    expect(unchanged.code).toBe(0);
  });

  it("refuses a path file that is not a path list, or is another pipeline's", async () => {
    const dir = project({
      "bad.json": "{]",
      "other.json": JSON.stringify({ pipelineId: "other", strategy: "shortest", paths: [] }),
    });
    const bad = await runCli("test", "code-review", "--paths", join(dir, "bad.json"));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("Validation/PathsFileInvalid");
    const other = await runCli("test", "code-review", "--paths", join(dir, "other.json"));
    expect(other.stderr).toContain("holds paths of other, not code-review");
  });

  it("lists a transition only an unsatisfiable condition leads to as uncovered, with the reason", async () => {
    const edited = pipelineCopy("code-review", (yaml) =>
      yaml.replace(
        "{ path: output.approved, equals: true }, to: done",
        '{ path: output.approved, equals: "yes" }, to: done',
      ),
    );
    const { stdout } = await runCli("test", edited, "--json");
    const report = JSON.parse(stdout) as TestJson;
    expect(report.failed).toBe(0);
    expect(report.coverage.transitions.uncovered).toEqual([
      {
        transition:
          'code-review.review -> code-review.done [xstate.done.actor.review: output.approved equals "yes"]',
        reason:
          'guard unsatisfiable under the schema: within --max-visits 5, only review\'s outcome "ok: output.approved equals "yes"" takes it, and no payload the completionSchema accepts makes output.approved equals "yes"',
      },
    ]);
  });
});

/**
 * `stagechart test <pipeline>` in a process of its own, its stdout read as it comes: each line
 * with the time (ms since the start) it arrived.
 */
function linesAsTheyCome(pipeline: string, ...flags: string[]) {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, "bin/stagechart.js"), "test", pipeline, ...flags],
    {
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 60_000,
    },
  );
  const start = performance.now();
  const lines: { text: string; at: number }[] = [];
  let partial = "";
  child.stdout.on("data", (chunk: Buffer) => {
    const at = performance.now() - start;
    const parts = (partial + chunk.toString()).split("\n");
    partial = parts.pop() ?? "";
    for (const text of parts) lines.push({ text, at });
  });
  return new Promise<{ code: number | null; lines: typeof lines }>((resolve) =>
    child.on("close", (code) => resolve({ code, lines })),
  );
}

describe("stagechart test prints each path as its run ends", () => {
  it("the first path's line comes while the other paths still run, and the summary last", async () => {
    // One path to each end state: enough of them that the runs take a while.
    const { code, lines } = await linesAsTheyCome("code-review-parallel", "--cover", "states");
    expect(code).toBe(0);
    const paths = lines.filter((line) => /^pass path-\d+$/.test(line.text));
    expect(paths.length).toBeGreaterThan(2);
    expect(paths[0]?.text).toBe("pass path-1");
    const summary = lines.at(-1);
    expect(summary?.text).toMatch(/^\d+ passed, 0 failed; (\d+)\/\1 transitions covered$/);
    // Written all at once at the end, the lines would arrive together; here the other paths'
    // runs (about a second in all) come between the first path's line and the last one's.
    expect((paths.at(-1)?.at ?? 0) - (paths[0]?.at ?? 0)).toBeGreaterThan(100);
  });

  it("counts the paths on a terminal, not when piped, and --json keeps its one report", async () => {
    const onTerminal = await runCliOn({ terminalWidth: 80 }, "test", "code-review");
    const counted = onTerminal.stdout.trim().split("\n");
    const total = counted.length - 1;
    expect(counted.slice(0, total)).toEqual(
      Array.from({ length: total }, (_, i) => `[${i + 1}/${total}] pass path-${i + 1}`),
    );
    expect(counted.at(-1)).toMatch(new RegExp(`^${total} passed, 0 failed; `));
    const piped = (await runCli("test", "code-review")).stdout.trim().split("\n");
    expect(piped.slice(0, total)).toEqual(
      Array.from({ length: total }, (_, i) => `pass path-${i + 1}`),
    );
    const json = await runCliOn({ terminalWidth: 80 }, "test", "code-review", "--json");
    const report = JSON.parse(json.stdout) as TestJson;
    expect(Object.keys(report)).toEqual(["passed", "failed", "paths", "coverage"]);
    expect(report.paths).toHaveLength(total);
  });
});
