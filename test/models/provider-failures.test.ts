import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/index.js";
import { startRun } from "../../src/runtime/run.js";
import { createStageActor, runStage } from "../../src/runtime/run-stage.js";
import {
  compatibleModel,
  type HostedProviderCase,
  PROVIDERS,
  providerModel,
} from "../support/hosted-models.js";
import { type LlmServer, type ServerReply, startLlmServer } from "../support/llm-server.js";
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

/** The providers whose replies carry tool-call arguments as text, sent on as they came. */
const ARGUMENTS_AS_TEXT = PROVIDERS.filter((p) => p.wire !== "anthropic");

describe.each(ARGUMENTS_AS_TEXT)("what the $provider provider can send back", (p) => {
  it("hands malformed tool-call JSON back to the model as a rejected completion, and goes on", async () => {
    server = await startLlmServer([
      { rawToolCalls: [{ name: "submit_plan", arguments: '{"summary": "half' }] },
      { toolCalls: [submitPlan] },
    ]);
    const h = modelHarness(await providerModel(p, server));

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    const [rejected] = payloads(h, "CompletionRejected");
    expect(rejected).toMatchObject({ reason: "schema" });
    expect(JSON.stringify(rejected)).toContain("not valid JSON");
    expect(toolResultOf(p.wire, server.requests[1]?.body)).toContain("not valid JSON");
  });
});

describe.each(ARGUMENTS_AS_TEXT)("tool-call arguments nested 100,000 deep, on $provider", (p) => {
  const deep = `{"summary": ${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
  const deepCall = (name: string): ServerReply => ({ rawToolCalls: [{ name, arguments: deep }] });

  it("are refused back to the model as the completion call's result, and the stage goes on", async () => {
    server = await startLlmServer([deepCall("submit_plan"), { toolCalls: [submitPlan] }]);
    const h = modelHarness(await providerModel(p, server));

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(payloads(h, "CompletionRejected")[0]).toMatchObject({ reason: "schema" });
    expect(toolResultOf(p.wire, server.requests[1]?.body)).toContain(
      "the arguments are nested deeper than 100 levels",
    );
  });

  it("are refused to another tool as invalid input, like arguments that are not JSON", async () => {
    server = await startLlmServer([deepCall("Grep"), { toolCalls: [submitPlan] }]);
    const h = modelHarness(await providerModel(p, server));

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(JSON.parse(toolResultOf(p.wire, server.requests[1]?.body) ?? "null")).toMatchObject({
      code: "ToolTerminal/InvalidToolInput",
    });
  });
});

describe("tool-call arguments nested 100,000 deep, on anthropic", () => {
  const anthropic = PROVIDERS.find((p) => p.provider === "anthropic") as HostedProviderCase;
  const deep = `{"summary": ${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
  const body = JSON.stringify({
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "test-model",
    content: [{ type: "tool_use", id: "toolu_1", name: "submit_plan", input: "<input>" }],
    stop_reason: "tool_use",
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  }).replace('"<input>"', deep);

  // Anthropic sends arguments as JSON inside the body: its client overflows converting them,
  // before stagechart sees the call. That is a reply the client cannot read: retried.
  it("are a reply the client cannot read, retried", async () => {
    server = await startLlmServer([{ body }, { toolCalls: [submitPlan] }]);
    const h = modelHarness(await providerModel(anthropic, server), { limits: fastRetries });

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(payloads(h, "ModelTurn")[0]).toMatchObject({
      outcome: "error",
      error: { code: "ProviderTransient/ProviderError" },
    });
  });
});

describe.each(PROVIDERS)("what the $provider provider can send back", (p) => {
  it("denies a tool the stage does not know, tells the model, and goes on", async () => {
    server = await startLlmServer([
      { toolCalls: [{ name: "DropDatabase", args: { name: "prod" } }] },
      { toolCalls: [submitPlan] },
    ]);
    const h = modelHarness(await providerModel(p, server));

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(payloads(h, "ToolDenied")).toEqual([
      expect.objectContaining({ tool: "DropDatabase", code: "ToolTerminal/UnknownTool" }),
    ]);
    // the rejection goes back as the call's result, in the provider's own tool-result message
    const toolResult = toolResultOf(p.wire, server.requests[1]?.body);
    expect(JSON.parse(toolResult ?? "null")).toMatchObject({
      code: "ToolTerminal/UnknownTool",
      message: expect.stringContaining('there is no tool named "DropDatabase"'),
    });
  });
});

/** The first tool result a request carries back to the model, as the text the model reads. */
function toolResultOf(wire: HostedProviderCase["wire"], body: Record<string, unknown> | undefined) {
  if (wire === "responses") {
    const items = (body?.input ?? []) as { type?: string; output?: string }[];
    return items.find((item) => item.type === "function_call_output")?.output;
  }
  const messages = (body?.messages ?? []) as { role: string; content: unknown }[];
  if (wire === "openai") {
    return messages.find((m) => m.role === "tool")?.content as string | undefined;
  }
  const blocks = messages.flatMap((m) =>
    Array.isArray(m.content) ? (m.content as { type: string; content?: unknown }[]) : [],
  );
  const result = blocks.find((b) => b.type === "tool_result")?.content;
  return typeof result === "string"
    ? result
    : (result as { text: string }[] | undefined)?.[0]?.text;
}

describe("a large reply", () => {
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

describe.each(PROVIDERS)("who retries, on $provider", (p) => {
  it("retries a 429 itself after the server's retry-after, once per engine attempt: the AI SDK client makes exactly one request", async () => {
    server = await startLlmServer([
      { status: 429, message: "slow down", headers: { "retry-after": "1" } },
      { toolCalls: [submitPlan] },
    ]);
    const h = modelHarness(await providerModel(p, server), { limits: fastRetries });

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
        context: { statusCode: 429, url: `${server.origin}${p.path}`, retryAfterMs: 1000 },
      },
      retryInMs: expect.any(Number),
    });
    // fastRetries would wait milliseconds; the server asked for a second.
    expect(payloads(h, "ModelTurn")[0]?.retryInMs).toBeGreaterThan(900);
  });

  it("fails the stage on a 400 without retrying it anywhere, with the server's message", async () => {
    server = await startLlmServer([{ status: 400, message: "messages: field required" }]);
    const h = modelHarness(await providerModel(p, server), { limits: fastRetries });

    const result = await runStage(h.host, stageInput(plan));

    expect(result).toMatchObject({
      verdict: "fail",
      error: {
        code: "ExtensionHost/ProviderRejected",
        message: "messages: field required",
        context: { statusCode: 400 },
      },
    });
    expect(server.requests).toHaveLength(1);
  });

  it("gives up after the host's provider retries when the server keeps failing", async () => {
    server = await startLlmServer([
      { status: 503, message: "overloaded" },
      { status: 503, message: "overloaded" },
      { status: 500, message: "broken" },
    ]);
    const h = modelHarness(await providerModel(p, server), {
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

describe.each(PROVIDERS)("a reply $provider's client cannot read", (p) => {
  // Turns stream: the bodies come as an event stream would, whatever the client expects in it.
  it.each([
    ["cut off", 'data: {"id": "chatcmpl-1", "choices": [{"index": 0, "mess'],
    ["not JSON", "<html>502 Bad Gateway</html>"],
    ["JSON of another shape", 'event: message_start\ndata: {"unexpected": true}\n\n'],
  ])("is transient when %s: the turn is retried, and the stage goes on", async (_what, body) => {
    server = await startLlmServer([{ body }, { toolCalls: [submitPlan] }]);
    const h = modelHarness(await providerModel(p, server), { limits: fastRetries });

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(server.requests).toHaveLength(2);
    // The stream began (a 200): what went wrong is in its body. (Anthropic's client reports a
    // first event it cannot read as a server error.)
    expect(payloads(h, "ModelTurn")[0]).toMatchObject({
      outcome: "error",
      error: { code: expect.stringMatching(/^ProviderTransient\//) },
      retryInMs: expect.any(Number),
    });
  });
});

describe("Anthropic's own errors", () => {
  const anthropic = PROVIDERS.find((p) => p.provider === "anthropic") as HostedProviderCase;

  it("retries a 529 overloaded_error, reading the message from Anthropic's error body", async () => {
    server = await startLlmServer([
      { status: 529, type: "overloaded_error", message: "Overloaded" },
      { toolCalls: [submitPlan] },
    ]);
    const h = modelHarness(await providerModel(anthropic, server), { limits: fastRetries });

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(payloads(h, "ModelTurn")[0]).toMatchObject({
      outcome: "error",
      error: {
        code: "ProviderTransient/ProviderUnavailable",
        message: "Overloaded",
        context: { statusCode: 529 },
      },
    });
  });

  it("fails at once on an invalid_request_error, whose message it keeps", async () => {
    server = await startLlmServer([
      { status: 400, type: "invalid_request_error", message: "max_tokens: must be positive" },
    ]);
    const h = modelHarness(await providerModel(anthropic, server), { limits: fastRetries });

    const result = await runStage(h.host, stageInput(plan));

    expect(result.error).toMatchObject({
      code: "ExtensionHost/ProviderRejected",
      message: "max_tokens: must be positive",
    });
    expect(server.requests).toHaveLength(1);
  });
});

describe.each(PROVIDERS)("time limits and cancellation on $provider", (p) => {
  it("aborts a call that outlives the host's model timeout, audits it, and retries", async () => {
    server = await startLlmServer([{ hold: true }, { toolCalls: [submitPlan] }]);
    const h = modelHarness(await providerModel(p, server), {
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
    const h = modelHarness(await providerModel(p, server));
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
});

describe("cancelling a run", () => {
  it("aborts the request in flight when the run is cancelled, and the run ends cancelled", async () => {
    server = await startLlmServer([{ hold: true }]);
    const pipeline = await loadPipelineFile(join(ROOT, "machines/code-review.yaml"));
    if (!pipeline.ok) throw new Error("the bundled pipeline does not load");
    const h = modelHarness(await compatibleModel(server));
    const run = await startRun(pipeline.value, { host: h.host, task: "refactor auth module" });
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
