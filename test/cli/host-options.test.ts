import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { settingsFor } from "../../src/cli/host-options.js";
import { bashConfinement, DEFAULT_SANDBOX } from "../../src/tools/bash-sandbox.js";
import { demoProject, runIn, runPipelineIn, storeCommand, summaryOf } from "../support/cli.js";

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
