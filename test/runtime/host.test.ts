import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryAuditLog } from "../../src/events/audit.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import { createHost } from "../../src/runtime/host.js";
import { MemoryJournal, modelCallKey, toolCallKey } from "../../src/runtime/journal.js";
import { startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import * as z from "../../src/zod.js";
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

describe("a host's journal and transcripts", () => {
  const planOnly = () => pipelineOf({ id: "plan-only", stages: [llm("plan")] });
  const grepKey = (h: ReturnType<typeof harness>) => {
    const ran = h.audit.events.find((e) => e.type === "ToolSucceeded");
    return toolCallKey("run-1", String(ran?.payload.proposalId));
  };
  const FIRST_REPLY_KEY = modelCallKey("run-1", "run-1/plan/1", 0);

  it("keeps nothing of an in-memory run when the host made it: the run's calls are recorded in its own", async () => {
    const h = harness(GREP_THEN_SUBMIT);
    const started = await startRun(planOnly(), { host: h.host, task: "t", runId: "run-1" });
    if (!started.ok) throw started.error;
    expect((await started.value.result).status).toBe("done");

    // The run made its calls (the audit log says so), and the host's journal holds none of them.
    expect(h.types()).toContain("ToolSucceeded");
    expect(h.host.journal.get(FIRST_REPLY_KEY, z.unknown())).toBeUndefined();
    expect(h.host.journal.get(grepKey(h), z.unknown())).toBeUndefined();
  });

  it("keep no transcript of an in-memory run when the host made them: the run's handle reads its own", async () => {
    const h = harness(GREP_THEN_SUBMIT);
    const started = await startRun(planOnly(), { host: h.host, task: "t", runId: "run-1" });
    if (!started.ok) throw started.error;
    expect((await started.value.result).status).toBe("done");

    expect(h.host.transcripts.read("run-1/plan/1")).toEqual([]);
    const roles = started.value.transcript("run-1/plan/1").map((entry) => entry.role);
    expect(roles).toEqual(["system", "user", "assistant", "tool", "assistant", "tool"]);
    expect(started.value.transcript("run-1/nothing/1")).toEqual([]);
  });

  it("of a stored run are its store's: its handle reads them after the run", async () => {
    const opened = SqliteStore.open(join(tempDir(), "runs.db"));
    if (!opened.ok) throw opened.error;
    try {
      const h = harness(GREP_THEN_SUBMIT);
      const started = await startRun(planOnly(), {
        host: h.host,
        store: opened.value,
        task: "t",
        runId: "run-1",
      });
      if (!started.ok) throw started.error;
      expect((await started.value.result).status).toBe("done");
      const roles = started.value.transcript("run-1/plan/1").map((entry) => entry.role);
      expect(roles).toEqual(["system", "user", "assistant", "tool", "assistant", "tool"]);
    } finally {
      opened.value.close();
    }
  });

  it("is the caller's to keep when given: an in-memory run records its calls there", async () => {
    const journal = new MemoryJournal();
    const h = harness(GREP_THEN_SUBMIT, { journal });
    const started = await startRun(planOnly(), { host: h.host, task: "t", runId: "run-1" });
    if (!started.ok) throw started.error;
    expect((await started.value.result).status).toBe("done");

    expect(journal.get(FIRST_REPLY_KEY, z.unknown())).toBeDefined();
    expect(journal.get(grepKey(h), z.unknown())).toBeDefined();
  });

  it("does not answer a second in-memory run of the same id with the first one's replies", async () => {
    let calls = 0;
    const h = harness(GREP_THEN_SUBMIT);
    const counted = {
      ...h.host,
      model: {
        ...h.host.model,
        model: {
          ...h.host.model.model,
          doGenerate: (call: Parameters<typeof h.host.model.model.doGenerate>[0]) => {
            calls += 1;
            return h.host.model.model.doGenerate(call);
          },
          doStream: (call: Parameters<typeof h.host.model.model.doStream>[0]) => {
            calls += 1;
            return h.host.model.model.doStream(call);
          },
        },
      },
    };
    for (const task of ["first", "second"]) {
      const started = await startRun(planOnly(), { host: counted, task, runId: "run-1" });
      if (!started.ok) throw started.error;
      expect((await started.value.result).status).toBe("done");
    }
    expect(calls).toBe(4);
  });
});
