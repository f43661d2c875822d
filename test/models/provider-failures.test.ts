import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/index.js";
import { startRun } from "../../src/runtime/run.js";
import { createStageActor, runStage } from "../../src/runtime/run-stage.js";
import { compatibleModel } from "../support/hosted-models.js";
import { type LlmServer, startLlmServer } from "../support/llm-server.js";
import { loadStage, modelHarness, stageInput } from "../support/stage-harness.js";

const ROOT = resolve(import.meta.dirname, "../..");
const plan = loadStage("plan");
const submitPlan = { name: "submit_plan", args: { summary: "Rename auth", steps: ["rename"] } };
const fastRetries = { providerRetryDelayMs: 1 };

let server: LlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const payloads = (h: ReturnType<typeof modelHarness>, type: string) =>
  h.audit.events.filter((e) => e.type === type).map((e) => e.payload);

describe("what a real provider can send back", () => {
  it("hands malformed tool-call JSON back to the model as a rejected completion, and goes on", async () => {
    server = await startLlmServer([
      { rawToolCalls: [{ name: "submit_plan", arguments: '{"summary": "half' }] },
      { toolCalls: [submitPlan] },
    ]);
    const h = modelHarness(await compatibleModel(server));

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    const [rejected] = payloads(h, "CompletionRejected");
    expect(rejected).toMatchObject({ reason: "schema" });
    expect(JSON.stringify(rejected)).toContain("not valid JSON");
    expect(JSON.stringify(server.requests[1]?.body.messages)).toContain("not valid JSON");
  });

  it("denies a tool the stage does not know, tells the model, and goes on", async () => {
    server = await startLlmServer([
      { toolCalls: [{ name: "DropDatabase", args: { name: "prod" } }] },
      { toolCalls: [submitPlan] },
    ]);
    const h = modelHarness(await compatibleModel(server));

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(payloads(h, "ToolDenied")).toEqual([
      expect.objectContaining({ tool: "DropDatabase", code: "ToolTerminal/UnknownTool" }),
    ]);
    const messages = server.requests[1]?.body.messages as { role: string; content: string }[];
    const toolResult = messages.find((m) => m.role === "tool");
    expect(JSON.parse(toolResult?.content ?? "null")).toMatchObject({
      code: "ToolTerminal/UnknownTool",
      message: expect.stringContaining('there is no tool named "DropDatabase"'),
    });
  });

  it("takes a completion with a multi-megabyte argument payload whole", async () => {
    const summary = "x".repeat(3 * 1024 * 1024);
    server = await startLlmServer([
      { toolCalls: [{ name: "submit_plan", args: { summary, steps: ["one"] } }] },
    ]);
    const h = modelHarness(await compatibleModel(server));

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect((result.parsed as { summary: string }).summary).toHaveLength(summary.length);
  });
});

describe("who retries", () => {
  it("retries a 429 itself after the server's retry-after, once per engine attempt: the AI SDK client makes exactly one request", async () => {
    server = await startLlmServer([
      { status: 429, message: "slow down", headers: { "retry-after": "1" } },
      { toolCalls: [submitPlan] },
    ]);
    const h = modelHarness(await compatibleModel(server), { limits: fastRetries });

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(server.requests).toHaveLength(2);
    expect(payloads(h, "ModelTurn")[0]).toEqual({
      turn: 1,
      outcome: "error",
      error: {
        class: "ProviderTransient",
        code: "ProviderTransient/ProviderUnavailable",
        message: "slow down",
        context: {
          statusCode: 429,
          url: `${server.origin}/v1/chat/completions`,
          retryAfterMs: 1000,
        },
      },
      retryInMs: expect.any(Number),
    });
    // fastRetries would wait milliseconds; the server asked for a second.
    expect(payloads(h, "ModelTurn")[0]?.retryInMs).toBeGreaterThan(900);
  });

  it("fails the stage on a 400 without retrying it anywhere", async () => {
    server = await startLlmServer([{ status: 400, message: "bad request" }]);
    const h = modelHarness(await compatibleModel(server), { limits: fastRetries });

    const result = await runStage(h.host, stageInput(plan));

    expect(result).toMatchObject({
      verdict: "fail",
      error: { code: "ExtensionHost/ProviderRejected" },
    });
    expect(server.requests).toHaveLength(1);
  });

  it("gives up after the host's provider retries when the server keeps failing", async () => {
    server = await startLlmServer([
      { status: 503, message: "overloaded" },
      { status: 503, message: "overloaded" },
      { status: 500, message: "broken" },
    ]);
    const h = modelHarness(await compatibleModel(server), {
      limits: { ...fastRetries, providerRetries: 2 },
    });

    const result = await runStage(h.host, stageInput(plan));

    expect(result).toMatchObject({
      verdict: "fail",
      error: { code: "ProviderTransient/ProviderUnavailable", message: "broken" },
    });
    expect(server.requests).toHaveLength(3);
  });
});

describe("time limits and cancellation", () => {
  it("aborts a call that outlives the host's model timeout, audits it, and retries", async () => {
    server = await startLlmServer([{ hold: true }, { toolCalls: [submitPlan] }]);
    const h = modelHarness(await compatibleModel(server), {
      limits: { ...fastRetries, modelCallTimeoutMs: 150 },
    });

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(server.requests.map((r) => r.aborted)).toEqual([true, false]);
    expect(payloads(h, "ModelTurn")[0]).toMatchObject({
      outcome: "error",
      error: { code: "ProviderTransient/ModelTimeout" },
    });
  });

  it("aborts the request in flight when the stage is cancelled, and audits StageCancelled", async () => {
    server = await startLlmServer([{ hold: true }]);
    const h = modelHarness(await compatibleModel(server));
    const actor = createStageActor(h.host, stageInput(plan));
    actor.start();

    await server.received(1);
    actor.send({ type: "CANCEL", reason: "user pressed stop" });
    await expect.poll(() => server?.requests[0]?.aborted).toBe(true);

    expect(h.types()).toContain("StageCancelled");
    expect(h.types()).not.toContain("ModelTurn");
    expect(actor.getSnapshot().output).toMatchObject({
      verdict: "fail",
      error: { code: "Cancellation/StageCancelled" },
    });
  });

  it("aborts the request in flight when the run is cancelled, and the run ends cancelled", async () => {
    server = await startLlmServer([{ hold: true }]);
    const pipeline = await loadPipelineFile(join(ROOT, "machines/code-review.yaml"));
    if (!pipeline.ok) throw new Error("the bundled pipeline does not load");
    const h = modelHarness(await compatibleModel(server));
    const run = startRun(pipeline.value, { host: h.host, task: "refactor auth module" });
    if (!run.ok) throw run.error;

    await server.received(1);
    expect(run.value.send({ type: "CANCEL", reason: "user pressed stop" }).ok).toBe(true);

    expect((await run.value.result).status).toBe("cancelled");
    await expect.poll(() => server?.requests[0]?.aborted).toBe(true);
    expect(h.audit.events.filter((e) => e.type === "StageCancelled")).toEqual([
      expect.objectContaining({ stageId: "plan" }),
    ]);
  });
});
