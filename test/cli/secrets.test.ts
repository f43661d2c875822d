import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { demoProject, runIn, storeCommand, storeOf, summaryOf } from "../support/cli.js";

const CANARIES = {
  OPENAI_API_KEY: "sk-canary-openai-4f1d",
  ANTHROPIC_API_KEY: "sk-ant-canary-9b2e",
  OPENAI_COMPATIBLE_API_KEY: "canary-compatible-7c3a",
};

const SHOW_ENV_STAGE = `---
id: show-env
name: Show the environment
allowedTools: ["Bash", "Read"]
completionTool: submit_env
completionSchema:
  type: object
  required: [seen]
  properties: { seen: { type: string } }
retryPolicy: { maxAttempts: 1, backoff: fixed, delayMs: 0 }
turnCap: 5
resolutionPolicy: fail
---
Print the environment.
`;

const PIPELINE = `id: env-check
entry: show-env
stages:
  show-env: { file: show-env.md }
  printenv: { run: "env; printenv OPENAI_API_KEY ANTHROPIC_API_KEY OPENAI_COMPATIBLE_API_KEY; true" }
next:
  show-env: printenv
`;

const SCRIPT = `stages:
  show-env:
    - tool: Bash
      args: { command: "env; printenv OPENAI_API_KEY" }
    - tool: Read
      args: { path: leaked.txt }
    - tool: submit_env
      args: { seen: "the environment" }
`;

/** A project whose pipeline prints the environment from a Bash call and from a command stage. */
function envProject(): string {
  const project = demoProject();
  writeFileSync(join(project, "show-env.md"), SHOW_ENV_STAGE);
  writeFileSync(join(project, "env-check.yaml"), PIPELINE);
  writeFileSync(join(project, "env-check.script.yaml"), SCRIPT);
  writeFileSync(join(project, "leaked.txt"), `a key left in a file: ${CANARIES.OPENAI_API_KEY}\n`);
  return project;
}

/** Runs the env-check pipeline on its scripted model, headless in yolo mode, and expects exit 0. */
async function runEnvCheck(project: string) {
  const run = await runIn(
    project,
    "run",
    join(project, "env-check.yaml"),
    "--model",
    `scripted:${join(project, "env-check.script.yaml")}`,
    "--mode",
    "yolo",
    "--headless",
    "--json",
  );
  expect(run.code, run.stderr).toBe(0);
  return run;
}

describe("provider keys and the commands a run starts", () => {
  beforeEach(() => {
    for (const [name, value] of Object.entries(CANARIES)) vi.stubEnv(name, value);
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("are never seen by Bash or a command stage: not in a tool result, the store, stdout or stderr", async () => {
    const project = envProject();
    const run = await runEnvCheck(project);
    const { runId } = summaryOf(run.stdout);
    const shown = await storeCommand(project, "show", runId, "--json");
    const audit = await storeCommand(project, "audit", runId, "--json");
    // The commands did run and print the environment: PATH is there, the keys are not.
    expect(readFileSync(storeOf(project), "latin1")).toContain("PATH=");
    const everything = [
      run.stdout,
      run.stderr,
      shown.stdout,
      audit.stdout,
      readFileSync(storeOf(project), "latin1"),
    ].join("\n");
    for (const canary of Object.values(CANARIES)) expect(everything).not.toContain(canary);
  });

  it("are removed from a tool result that holds one before it is journaled", async () => {
    const project = envProject();
    await runEnvCheck(project);
    const store = readFileSync(storeOf(project), "latin1");
    expect(store).toContain("a key left in a file: [redacted]");
    expect(store).not.toContain(CANARIES.OPENAI_API_KEY);
  });
});
