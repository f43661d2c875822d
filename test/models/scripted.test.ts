import {
  APICallError,
  type LanguageModelV3CallOptions,
  type LanguageModelV3StreamPart,
} from "@ai-sdk/provider";
import { describe, expect, it, vi } from "vitest";
import type { TranscriptEntry } from "../../src/compiler/stage-types.js";
import { StagechartError } from "../../src/errors.js";
import {
  createScriptedModel,
  parseScript,
  promptTokens,
  type ScriptedModelOptions,
  type StagechartCallInfo,
} from "../../src/models/index.js";
import { toPrompt } from "../../src/runtime/transcripts.js";

const SCRIPT = `
stages:
  plan:
    - tool: Edit
      args: { path: src/auth.ts, old: a, new: b }
    - calls:
        - { tool: Grep, args: { pattern: token } }
        - { tool: Read, args: { path: src/auth.ts } }
    - text: Thinking out loud
    - tool: submit_plan
      args: { summary: Split the module, steps: [extract, test] }
  test:
    - { error: upstream 503 }
    - { error: slow down, status: 429 }
    - { error: bad request, status: 400 }
    - { text: recovered }
  review:
    - { text: plain review }
  code-review/review:
    - { text: code-review's review }
  slow:
    - { delayMs: 60, text: late }
    - { delayMs: 5000, text: never }
  counted:
    - { text: hi, usage: { inputTokens: 10, outputTokens: 3 } }
    - { text: hi, usage: { outputTokens: 7 } }
`;

function modelFor(text = SCRIPT, options?: ScriptedModelOptions) {
  const script = parseScript(text, "machines/code-review.script.yaml");
  if (!script.ok) throw new Error(JSON.stringify(script.diagnostics));
  return createScriptedModel(script.value, options).model;
}

function callFor(
  info: Partial<StagechartCallInfo> & { stageId: string },
  extra: Partial<LanguageModelV3CallOptions> = {},
): LanguageModelV3CallOptions {
  const stagechart = { stageExecutionId: `run-1/${info.stageId}/1`, attempt: 1, turn: 1, ...info };
  return {
    prompt: [{ role: "user", content: [{ type: "text", text: "Refactor the auth module." }] }],
    providerOptions: { stagechart },
    ...extra,
  };
}

const generate = (model: ReturnType<typeof modelFor>, info: Parameters<typeof callFor>[0]) =>
  model.doGenerate(callFor(info));

async function contentOf(model: ReturnType<typeof modelFor>, info: Parameters<typeof callFor>[0]) {
  return (await generate(model, info)).content;
}

async function partsOf(stream: ReadableStream<LanguageModelV3StreamPart>) {
  const parts: LanguageModelV3StreamPart[] = [];
  const reader = stream.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    parts.push(read.value);
  }
  return parts;
}

describe("the scripted model as a LanguageModelV3", () => {
  it("identifies itself as a v3 model with tool calling", () => {
    const script = parseScript(SCRIPT, "machines/code-review.script.yaml");
    if (!script.ok) throw new Error("script");
    const handle = createScriptedModel(script.value);
    expect(handle.capabilities).toEqual({ toolCalling: true, streaming: true });
    expect(handle.model).toMatchObject({
      specificationVersion: "v3",
      provider: "stagechart.scripted",
      modelId: "code-review.script.yaml",
      supportedUrls: {},
    });
    expect(modelFor(SCRIPT, { modelId: "seed" }).modelId).toBe("seed");
  });

  it("answers a tool entry with one tool call whose input is the args as JSON", async () => {
    const result = await generate(modelFor(), { stageId: "plan" });
    expect(result.content).toEqual([
      {
        type: "tool-call",
        toolCallId: "call_plan_0_0",
        toolName: "Edit",
        input: JSON.stringify({ path: "src/auth.ts", old: "a", new: "b" }),
      },
    ]);
    expect(result.finishReason).toEqual({ unified: "tool-calls", raw: "tool-calls" });
    expect(result.warnings).toEqual([]);
  });

  it("answers a calls entry with every call, in order, each with its own id", async () => {
    const model = modelFor();
    await generate(model, { stageId: "plan" });
    expect(await contentOf(model, { stageId: "plan" })).toEqual([
      {
        type: "tool-call",
        toolCallId: "call_plan_1_0",
        toolName: "Grep",
        input: '{"pattern":"token"}',
      },
      {
        type: "tool-call",
        toolCallId: "call_plan_1_1",
        toolName: "Read",
        input: '{"path":"src/auth.ts"}',
      },
    ]);
  });

  it("answers a text entry with text and no tool call", async () => {
    const result = await modelFor().doGenerate(callFor({ stageId: "plan", position: 2 }));
    expect(result.content).toEqual([{ type: "text", text: "Thinking out loud" }]);
    expect(result.finishReason).toEqual({ unified: "stop", raw: "stop" });
  });

  it("answers with text once a stage's entries run out", async () => {
    const model = modelFor();
    expect(await contentOf(model, { stageId: "review" })).toEqual([
      { type: "text", text: "plain review" },
    ]);
    for (let i = 0; i < 2; i++) {
      expect(await contentOf(model, { stageId: "review" })).toEqual([
        { type: "text", text: "(scripted model: no more entries for stage review)" },
      ]);
    }
  });

  it("fails the first call of a stage the script has no entries for, naming the stage and the script's stages", async () => {
    const failure = await generate(modelFor(), { stageId: "deploy", pipelineId: "ship" }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(StagechartError);
    expect(failure).toMatchObject({
      code: "Validation/ScriptStageMissing",
      message:
        "the scripted model machines/code-review.script.yaml has no entries for stage deploy of pipeline ship; its stages are plan, test, review, code-review/review, slow, counted",
      context: { stageId: "deploy", pipelineId: "ship" },
    });
    const stopsShort = modelFor("stages:\n  review: []\n");
    await expect(generate(stopsShort, { stageId: "review" })).rejects.toMatchObject({
      code: "Validation/ScriptStageMissing",
    });
    const misspelt = modelFor("stages:\n  reveiw: [{ text: hi }]\n");
    await expect(generate(misspelt, { stageId: "review" })).rejects.toThrow(
      "has no entries for stage review; its stages are reveiw (is reveiw a misspelling of review?)",
    );
  });
});

describe("which entry answers a call", () => {
  it("takes a stage's entries in order across attempts, turns and executions", async () => {
    const model = modelFor();
    const calls = [
      { stageId: "plan", attempt: 1, turn: 1 },
      { stageId: "plan", attempt: 1, turn: 2 },
      { stageId: "plan", attempt: 2, turn: 1 },
      { stageId: "plan", stageExecutionId: "run-1/plan/2", attempt: 1, turn: 1 },
    ];
    const names = [];
    for (const call of calls) {
      const [first] = await contentOf(model, call);
      names.push(first?.type === "tool-call" ? first.toolName : first?.type);
    }
    expect(names).toEqual(["Edit", "Grep", "text", "submit_plan"]);
  });

  it("keeps one cursor per stage", async () => {
    const model = modelFor();
    await generate(model, { stageId: "plan" });
    expect(await contentOf(model, { stageId: "review" })).toEqual([
      { type: "text", text: "plain review" },
    ]);
    const [second] = await contentOf(model, { stageId: "plan" });
    expect(second).toMatchObject({ toolName: "Grep" });
  });

  it("answers with the entry at `position` when the call gives one, and continues after it", async () => {
    const model = modelFor();
    expect(await contentOf(model, { stageId: "plan", position: 3 })).toEqual([
      expect.objectContaining({ toolName: "submit_plan", toolCallId: "call_plan_3_0" }),
    ]);
    expect(await contentOf(model, { stageId: "plan", position: 0 })).toEqual([
      expect.objectContaining({ toolName: "Edit" }),
    ]);
    expect(await contentOf(model, { stageId: "plan" })).toEqual([
      expect.objectContaining({ toolName: "Grep" }),
      expect.objectContaining({ toolName: "Read" }),
    ]);
  });

  it("prefers pipelineId/stageId, falling back to the stage id", async () => {
    const model = modelFor();
    expect(await contentOf(model, { stageId: "review", pipelineId: "code-review" })).toEqual([
      { type: "text", text: "code-review's review" },
    ]);
    expect(await contentOf(model, { stageId: "review", pipelineId: "hotfix" })).toEqual([
      { type: "text", text: "plain review" },
    ]);
  });

  it("rejects a call that does not say which stage makes it, as a provider would a bad request", async () => {
    const call = callFor({ stageId: "plan" });
    const rejection = modelFor().doGenerate({ ...call, providerOptions: {} });
    await expect(rejection).rejects.toSatisfy(
      (e) => APICallError.isInstance(e) && e.statusCode === 400 && !e.isRetryable,
    );
  });
});

describe("provider errors", () => {
  it("throws an APICallError per error entry, retryable for 429 and 5xx only", async () => {
    const model = modelFor();
    const seen = [];
    for (let i = 0; i < 3; i++) {
      const error = await generate(model, { stageId: "test" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (!APICallError.isInstance(error)) throw new Error(`not an APICallError: ${error}`);
      seen.push([error.message, error.statusCode, error.isRetryable, error.url]);
    }
    expect(seen).toEqual([
      ["upstream 503", 503, true, "scripted://test"],
      ["slow down", 429, true, "scripted://test"],
      ["bad request", 400, false, "scripted://test"],
    ]);
    expect(await contentOf(model, { stageId: "test" })).toEqual([
      { type: "text", text: "recovered" },
    ]);
  });
});

describe("delays", () => {
  it("answers a delayed entry after its delay", async () => {
    const started = performance.now();
    expect(await contentOf(modelFor(), { stageId: "slow" })).toEqual([
      { type: "text", text: "late" },
    ]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
  });

  it("stops waiting the moment the call is aborted, rejecting with the signal's reason", async () => {
    const controller = new AbortController();
    const reason = new Error("stage cancelled");
    const started = performance.now();
    const call = callFor({ stageId: "slow", position: 1 }, { abortSignal: controller.signal });
    const pending = modelFor().doGenerate(call);
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
    expect(performance.now() - started).toBeLessThan(500);
  });

  it("rejects an already aborted call without using up an entry", async () => {
    const model = modelFor();
    const aborted = callFor({ stageId: "plan" }, { abortSignal: AbortSignal.abort() });
    await expect(model.doGenerate(aborted)).rejects.toMatchObject({ name: "AbortError" });
    expect(await contentOf(model, { stageId: "plan" })).toEqual([
      expect.objectContaining({ toolName: "Edit" }),
    ]);
  });
});

describe("usage", () => {
  it("estimates tokens from the prompt and the answer when the entry does not say", async () => {
    const short = await generate(modelFor(), { stageId: "plan" });
    const long = await modelFor().doGenerate(
      callFor(
        { stageId: "plan" },
        { prompt: [{ role: "user", content: [{ type: "text", text: "x".repeat(4000) }] }] },
      ),
    );
    expect(short.usage).toEqual({
      inputTokens: {
        total: expect.any(Number),
        noCache: short.usage.inputTokens.total,
        cacheRead: 0,
        cacheWrite: 0,
      },
      outputTokens: {
        total: expect.any(Number),
        text: short.usage.outputTokens.total,
        reasoning: 0,
      },
    });
    expect(short.usage.inputTokens.total).toBeGreaterThan(0);
    expect(short.usage.outputTokens.total).toBeGreaterThan(0);
    expect(long.usage.inputTokens.total).toBeGreaterThan(1000);
    expect(long.usage.outputTokens.total).toBe(short.usage.outputTokens.total);
  });

  it("estimates a long transcript's prompt as a whole-prompt count would, measuring each message once", () => {
    const whole = (value: unknown): number => JSON.stringify(value).length;
    const entries: TranscriptEntry[] = [{ role: "system", text: "You review code." }];
    const stringify = vi.spyOn(JSON, "stringify");
    let measured = 0;
    let last = 0;
    try {
      for (let turn = 0; turn < 300; turn++) {
        const toolCallId = `call_${turn}`;
        entries.push(
          { role: "assistant", text: "", calls: [{ toolCallId, tool: "Read", args: { turn } }] },
          { role: "tool", toolCallId, tool: "Read", result: "y".repeat(200), isError: false },
        );
        const prompt = toPrompt(entries);
        stringify.mockClear();
        const estimate = promptTokens(prompt);
        measured += stringify.mock.results.reduce((sum, r) => sum + String(r.value).length, 0);
        last = whole(prompt);
        expect(estimate).toBe(Math.ceil(last / 4));
      }
    } finally {
      stringify.mockRestore();
    }
    // Serialising every turn's whole prompt would measure about 150 times the last prompt's
    // length; measuring each message once measures it under twice (a turn's trailing tool
    // message is made afresh on the next turn, so it is measured again then).
    expect(measured).toBeLessThan(2 * last);
  });

  it("reports the entry's usage where it gives one", async () => {
    const model = modelFor();
    const both = await generate(model, { stageId: "counted" });
    expect([both.usage.inputTokens.total, both.usage.outputTokens.total]).toEqual([10, 3]);
    const outputOnly = await generate(model, { stageId: "counted" });
    expect(outputOnly.usage.outputTokens.total).toBe(7);
    expect(outputOnly.usage.inputTokens.total).toBeGreaterThan(0);
  });
});

describe("streaming", () => {
  it.each([
    ["one tool call", 0],
    ["several tool calls", 1],
    ["text", 2],
  ])("streams the same answer as doGenerate for %s", async (_, position) => {
    const info = { stageId: "plan", position };
    const generated = await modelFor().doGenerate(callFor(info));
    const parts = await partsOf((await modelFor().doStream(callFor(info))).stream);

    expect(parts[0]).toEqual({ type: "stream-start", warnings: [] });
    expect(parts.at(-1)).toEqual({
      type: "finish",
      finishReason: generated.finishReason,
      usage: generated.usage,
    });
    const text = parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("");
    const calls = parts.filter((p) => p.type === "tool-call");
    expect([...calls, ...(text ? [{ type: "text", text }] : [])]).toEqual(generated.content);
  });

  it("streams text in pieces between a text-start and a text-end of one id", async () => {
    const { stream } = await modelFor().doStream(callFor({ stageId: "plan", position: 2 }));
    expect((await partsOf(stream)).slice(1, -1)).toEqual([
      { type: "text-start", id: "text-0" },
      { type: "text-delta", id: "text-0", delta: "Thinking out lou" },
      { type: "text-delta", id: "text-0", delta: "d" },
      { type: "text-end", id: "text-0" },
    ]);
  });

  it("streams a tool call's arguments in pieces, then the call whole", async () => {
    const { stream } = await modelFor().doStream(callFor({ stageId: "plan", position: 0 }));
    const parts = await partsOf(stream);
    const call = parts.find((p) => p.type === "tool-call");
    if (call?.type !== "tool-call") throw new Error("no tool call");
    const pieces = parts.flatMap((p) =>
      p.type === "tool-input-delta" && p.id === call.toolCallId ? [p.delta] : [],
    );
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).toBe(call.input);
    const order = parts.map((p) => p.type);
    expect(order.indexOf("tool-input-start")).toBeLessThan(order.indexOf("tool-input-delta"));
    expect(order.indexOf("tool-input-end")).toBeLessThan(order.indexOf("tool-call"));
    expect(order.at(-1)).toBe("finish");
  });

  it("rejects a streamed call on an error entry, before any part", async () => {
    await expect(modelFor().doStream(callFor({ stageId: "test" }))).rejects.toSatisfy(
      (e) => APICallError.isInstance(e) && e.statusCode === 503,
    );
  });
});
