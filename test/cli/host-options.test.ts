import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { hostFor, settingsFor } from "../../src/cli/host-options.js";
import { SqliteStore } from "../../src/store/index.js";
import { bashConfinement, DEFAULT_SANDBOX } from "../../src/tools/bash-sandbox.js";
import {
  demoProject,
  REPO_ROOT,
  runIn,
  runPipelineIn,
  storeCommand,
  summaryOf,
} from "../support/cli.js";

describe("the settings a run stores for resume", () => {
  it("keeps file-based model specs and the cassette as absolute paths, so resume finds them anywhere", () => {
    const settings = settingsFor({
      pipelineFile: "machines/code-review.yaml",
      model: "replay:cassettes/run.json",
      record: "out/again.json",
      mode: "ask",
    });
    expect(settings).toMatchObject({
      model: `replay:${resolve("cassettes/run.json")}`,
      record: resolve("out/again.json"),
    });
  });

  it("keeps a hosted model's spec as given: a spec, never a key", () => {
    const settings = settingsFor({
      pipelineFile: "machines/code-review.yaml",
      model: "openai-compatible:http://localhost:11434/v1#llama3.1",
      mode: "ask",
    });
    expect(settings.model).toBe("openai-compatible:http://localhost:11434/v1#llama3.1");
    expect(settings).not.toHaveProperty("record");
  });

  it("stores a spec whose base URL carries a key without it, and notes that a resume needs one", () => {
    const settings = settingsFor({
      pipelineFile: "machines/code-review.yaml",
      model: "openai-compatible:http://user:sk-in-url@localhost:8000/v1#m",
      mode: "ask",
    });
    expect(settings.model).toBe("openai-compatible:http://localhost:8000/v1#m");
    expect(settings.modelKeyRequired).toBe(true);
    expect(JSON.stringify({ ...settings })).not.toContain("sk-in-url");
  });
});

describe("--sandbox and --allow-network", () => {
  it("are stored with the run, so resume confines Bash the same way", () => {
    const base = { pipelineFile: "machines/code-review.yaml", mode: "ask" as const };
    expect(settingsFor(base)).toMatchObject({ sandbox: "auto" });
    expect(settingsFor(base)).not.toHaveProperty("network");
    expect(settingsFor({ ...base, sandbox: "required", allowNetwork: true })).toMatchObject({
      sandbox: "required",
      network: true,
    });
  });

  it("--unconfined-bash is stored with the run too, so a resume may run Bash the same way", () => {
    const base = { pipelineFile: "machines/code-review.yaml", mode: "ask" as const };
    expect(settingsFor(base)).not.toHaveProperty("unconfinedBash");
    expect(settingsFor({ ...base, unconfinedBash: true })).toMatchObject({ unconfinedBash: true });
  });

  it("--sandbox off warns on stderr that Bash runs unconfined, and the audit log says so", async () => {
    const project = demoProject();
    const run = await runPipelineIn(
      project,
      "code-review",
      "refactor auth module",
      "--headless",
      "--sandbox",
      "off",
      "--json",
    );
    expect(run.code).toBe(0);
    expect(run.stderr.split("\n")).toContain(
      "stagechart: warning: Bash runs unconfined: commands can read and write anything this user can; the host turned the sandbox off",
    );
    const { runId } = summaryOf(run.stdout);
    const audit = await storeCommand(project, "audit", runId, "--json");
    const events = JSON.parse(audit.stdout) as { type: string; payload: unknown }[];
    expect(events[1]).toMatchObject({
      type: "SandboxUnavailable",
      payload: { mode: "off", bash: "unconfined" },
    });
  });

  it("--sandbox with an unknown mode is a usage error", async () => {
    const run = await runIn(demoProject(), "run", "code-review", "--sandbox", "maybe");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--sandbox");
  });

  it.skipIf(!bashConfinement(DEFAULT_SANDBOX).sandboxed && process.env.CI !== "true")(
    "--sandbox required where bubblewrap runs: no warning, and the run goes as usual",
    async () => {
      const run = await runPipelineIn(
        demoProject(),
        "code-review",
        "refactor auth module",
        "--headless",
        "--sandbox",
        "required",
        "--json",
      );
      expect(run.code).toBe(0);
      expect(run.stderr).not.toContain("warning");
    },
  );
});

describe("Bash on a machine without bubblewrap (the installed binary, on a PATH without bwrap)", () => {
  const SECRET = "beside-the-root-secret";

  /**
   * A project whose pipeline has one stage, a command that prints a file beside the root, and a
   * PATH that has bash and cat but no bwrap.
   */
  function machineWithoutBwrap() {
    const world = mkdtempSync(join(tmpdir(), "stagechart-no-bwrap-"));
    const [project, bin] = [join(world, "project"), join(world, "bin")];
    mkdirSync(join(project, "machines"), { recursive: true });
    mkdirSync(bin);
    for (const tool of ["bash", "cat"]) symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
    writeFileSync(join(world, "beside.txt"), `${SECRET}\n`);
    writeFileSync(
      join(project, "machines/peek.yaml"),
      [
        "id: peek",
        "description: Prints a file beside the root",
        "context: { type: object }",
        "entry: look",
        "stages:",
        '  look: { run: "cat ../beside.txt" }',
        "next:",
        "  look: done",
      ].join("\n"),
    );
    writeFileSync(join(project, "machines/peek.script.yaml"), "stages: {}\n");
    return { project, path: bin };
  }

  async function runPeek(env: Record<string, string>, ...flags: string[]) {
    const { project, path } = machineWithoutBwrap();
    const { STAGECHART_UNCONFINED_BASH: _, ...inherited } = process.env;
    const run = spawnSync(
      process.execPath,
      [
        join(REPO_ROOT, "bin/stagechart.js"),
        "run",
        "machines/peek.yaml",
        "--headless",
        "--mode",
        "yolo",
        "--json",
        ...flags,
      ],
      { cwd: project, env: { ...inherited, PATH: path, ...env }, encoding: "utf8" },
    );
    const summary = summaryOf(run.stdout);
    const audit = await storeCommand(project, "audit", summary.runId, "--json");
    const events = JSON.parse(audit.stdout) as { type: string; payload: unknown }[];
    return { run, summary, sandboxEvent: events.find((e) => e.type === "SandboxUnavailable") };
  }

  it("refuses Bash with ToolTerminal/SandboxUnavailable, saying how to install bubblewrap", async () => {
    const { run, summary, sandboxEvent } = await runPeek({});
    expect(run.status).toBe(1);
    expect(summary.status).toBe("failed");
    expect(run.stdout + run.stderr).not.toContain(SECRET);
    expect(run.stderr).toContain("ToolTerminal/SandboxUnavailable");
    expect(run.stderr).toContain("apt-get install bubblewrap");
    expect(sandboxEvent?.payload).toMatchObject({ mode: "auto", bash: "refused" });
  });

  it.each([
    ["--unconfined-bash", {}, ["--unconfined-bash"]],
    ["STAGECHART_UNCONFINED_BASH=1", { STAGECHART_UNCONFINED_BASH: "1" }, []],
  ])(
    "with %s, runs Bash unconfined, warns, and the audit log records the choice",
    async (_, env, flags) => {
      const { run, summary, sandboxEvent } = await runPeek(env, ...flags);
      expect(summary.status).toBe("done");
      expect(summary.output.stdoutTail).toContain(SECRET);
      expect(run.stderr).toContain("stagechart: warning: Bash runs unconfined");
      expect(sandboxEvent?.payload).toEqual({
        mode: "auto",
        reason: "bubblewrap (bwrap) is not installed",
        bash: "unconfined",
        allowUnconfined: true,
      });
    },
  );
});

describe("--max-parallel", () => {
  /** Two sub-pipelines side by side, each running test and lint side by side: four at once. */
  function nestedProject(): string {
    const project = demoProject();
    const stage = (name: string) => readFileSync(join(REPO_ROOT, "stages", `${name}.md`), "utf8");
    const context = "context: { type: object, properties: { task: { type: string } } }";
    const files: Record<string, string> = {
      "start.md": stage("plan").replace("id: plan", "id: start"),
      "fan.md": stage("plan").replace("id: plan", "id: fan"),
      "test.md": stage("test"),
      "lint.md": stage("lint"),
      "outer.yaml": `id: outer
${context}
entry: start
stages:
  start: { file: ./start.md }
  left: { pipeline: ./checks.yaml }
  right: { pipeline: ./checks.yaml }
next:
  start: { parallel: [left, right], join: done }
`,
      "checks.yaml": `id: checks
${context}
entry: fan
stages:
  fan: { file: ./fan.md }
  test: { file: ./test.md }
  lint: { file: ./lint.md }
next:
  fan: { parallel: [test, lint], join: done, maxConcurrency: 2 }
`,
      "outer.script.yaml": `stages:
  start: [{ tool: submit_plan, args: { summary: s, steps: [] } }]
  fan: [{ tool: submit_plan, args: { summary: s, steps: [] } }]
  test: [{ tool: submit_test, args: { passed: true, summary: s, failures: [] }, delayMs: 150 }]
  lint: [{ tool: submit_lint, args: { clean: true, issues: [] }, delayMs: 150 }]
`,
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(project, name), text);
    return project;
  }

  /** The most test and lint executions between their StageSetup and StageExited at once. */
  function peakOf(project: string, runId: string): number {
    const opened = SqliteStore.open(join(project, ".stagechart/runs.db"));
    if (!opened.ok) throw opened.error;
    const events = opened.value.auditOf(runId);
    opened.value.close();
    const working = new Set<string>();
    let peak = 0;
    for (const event of events) {
      if (event.stageId !== "test" && event.stageId !== "lint") continue;
      const execution = event.stageExecutionId as string;
      if (event.type === "StageSetup") working.add(execution);
      if (event.type === "StageExited") working.delete(execution);
      peak = Math.max(peak, working.size);
    }
    return peak;
  }

  it("caps the stages working at once across the run's groups and sub-pipelines, and is stored for resume", async () => {
    const project = nestedProject();
    const outer = join(project, "outer.yaml");
    for (const [runId, flags, peak] of [
      ["capped", ["--max-parallel", "2"], 2],
      ["free", [], 4],
    ] as const) {
      const run = await runIn(project, "run", outer, "--task", "t", "--run-id", runId, ...flags);
      expect(run.code, run.stderr).toBe(0);
      expect(peakOf(project, runId), runId).toBe(peak);
    }
    const opened = SqliteStore.open(join(project, ".stagechart/runs.db"));
    if (!opened.ok) throw opened.error;
    const stored = opened.value.getRun("capped");
    opened.value.close();
    expect(stored.ok && stored.value.options).toMatchObject({ maxParallel: 2 });
  });

  it("reaches the host as its maxParallelStages, absent: no cap", async () => {
    const base = { pipelineFile: "machines/code-review.yaml", mode: "ask" as const };
    const capped = await hostFor(settingsFor({ ...base, maxParallel: 3 }), {});
    expect(capped.ok && capped.value.limits.maxParallelStages).toBe(3);
    expect(capped.ok && capped.value.stageSlots).toBeDefined();
    const free = await hostFor(settingsFor(base), {});
    expect(free.ok && free.value.limits.maxParallelStages).toBe(Number.POSITIVE_INFINITY);
    expect(free.ok && free.value.stageSlots).toBeUndefined();
  });

  it.each(["0", "-2", "1.5", "many"])("--max-parallel %s is a usage error", async (n) => {
    const project = demoProject();
    const run = await runPipelineIn(project, "code-review", "t", "--max-parallel", n);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--max-parallel");
    const resume = await storeCommand(project, "resume", "r1", "--max-parallel", n);
    expect(resume.code).toBe(2);
  });
});
