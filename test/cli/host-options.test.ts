import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { settingsFor } from "../../src/cli/host-options.js";
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
