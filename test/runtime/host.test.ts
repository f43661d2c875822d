import { describe, expect, it } from "vitest";
import { MemoryAuditLog } from "../../src/events/audit.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import { createHost } from "../../src/runtime/host.js";
import { startRun } from "../../src/runtime/run.js";
import { llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

/** An environment that counts how often its variables are listed (a command's env is built so). */
function countedEnv(variables: Record<string, string>) {
  let listings = 0;
  const env = new Proxy(variables, {
    ownKeys(target) {
      listings++;
      return Reflect.ownKeys(target);
    },
  });
  return { env, listings: () => listings };
}

const GREP_THEN_SUBMIT = `
stages:
  plan:
    - tool: Grep
      args: { pattern: auth }
    - tool: submit_plan
      args: { summary: "s", steps: [] }
`;

const withBash = (text: string) =>
  text.replace('["Read", "Grep", "Glob"]', '["Read", "Grep", "Bash"]');

const KEYED = { PATH: "/usr/bin", OPENAI_API_KEY: "sk-test-123456", LEAKY: "x sk-test-123456 y" };

describe("a host's command environment", () => {
  it("is built only when a command needs it: a run whose tools start no command never lists the environment", async () => {
    const counted = countedEnv({ ...KEYED });
    const h = harness(GREP_THEN_SUBMIT, { env: counted.env });
    const pipeline = pipelineOf({ id: "plan-only", stages: [llm("plan")] });

    const started = await startRun(pipeline, { host: h.host, task: "refactor", runId: "run-1" });
    if (!started.ok) throw started.error;

    expect((await started.value.result).status).toBe("done");
    expect(counted.listings()).toBe(0);
  });

  it("is built once, for the first command a run starts", async () => {
    const counted = countedEnv({ ...KEYED });
    const h = harness(
      GREP_THEN_SUBMIT.replace("Grep", "Bash").replace("pattern: auth", "command: env"),
      {
        env: counted.env,
        sandbox: { mode: "off" },
      },
    );
    const pipeline = pipelineOf({ id: "plan-only", stages: [llm("plan", withBash)] });

    const started = await startRun(pipeline, { host: h.host, task: "refactor", runId: "run-1" });
    if (!started.ok) throw started.error;

    expect((await started.value.result).status).toBe("done");
    expect(counted.listings()).toBe(1);
    const ran = h.audit.events.find((e) => e.type === "ToolSucceeded");
    expect(ran).toBeDefined();
  });

  it("is built once, without the provider keys nor a variable holding one", () => {
    const counted = countedEnv({ ...KEYED });
    const model = createScriptedModel({ file: "none.script.yaml", stages: new Map() });
    const host = createHost({
      model,
      audit: new MemoryAuditLog(),
      root: tempDir(),
      env: counted.env,
    });

    expect(host.commandEnv).toEqual({ PATH: "/usr/bin" });
    expect(host.commandEnv).toBe(host.commandEnv);
    expect(counted.listings()).toBe(1);
  });

  it("scrubs a provider key set after the host was made, and every variable holding it", () => {
    const env: Record<string, string> = { PATH: "/usr/bin" };
    const model = createScriptedModel({ file: "none.script.yaml", stages: new Map() });
    const host = createHost({ model, audit: new MemoryAuditLog(), root: tempDir(), env });
    env.OPENAI_API_KEY = "sk-rotated-999";
    env.OPENAI_BASE_URL = "https://u:sk-rotated-999@proxy.example/v1";

    expect(host.commandEnv).toEqual({ PATH: "/usr/bin" });
  });
});

describe("a host's model calls", () => {
  /** The scripted plan stage's model, keeping the idle limit each call was given. */
  function idleLimitsTold(limits?: { modelIdleTimeoutMs: number }) {
    const told: unknown[] = [];
    const h = harness(GREP_THEN_SUBMIT, limits && { limits });
    const { model } = h.host.model;
    const host = {
      ...h.host,
      model: {
        ...h.host.model,
        model: {
          ...model,
          doGenerate: (options: Parameters<typeof model.doGenerate>[0]) => {
            told.push(options.providerOptions?.stagechart?.idleTimeoutMs);
            return model.doGenerate(options);
          },
        },
      },
    };
    return { host, told };
  }

  it("tell the model how long its server may stay silent: 60 s, or the host's modelIdleTimeoutMs", async () => {
    const pipeline = pipelineOf({ id: "plan-only", stages: [llm("plan")] });
    for (const [limits, expected] of [
      [undefined, 60_000],
      [{ modelIdleTimeoutMs: 1500 }, 1500],
    ] as const) {
      const { host, told } = idleLimitsTold(limits);
      const started = await startRun(pipeline, { host, task: "refactor", runId: "run-1" });
      if (!started.ok) throw started.error;

      expect((await started.value.result).status).toBe("done");
      expect(told).toEqual([expected, expected]);
    }
  });
});
