import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  BUNDLED_PRICES,
  costOf,
  loadPriceFile,
  modelName,
  priceOf,
  pricingOf,
} from "../../src/models/prices.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import { runStage } from "../../src/runtime/run-stage.js";
import { hostedModel, TEST_KEY } from "../support/hosted-models.js";
import { type LlmServer, startLlmServer } from "../support/llm-server.js";
import { loadStage, modelHarness, stageInput } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

describe("a model's name", () => {
  it("is the spec's <provider>:<model id>, whichever AI SDK API the provider uses", () => {
    expect(modelName({ provider: "openai.chat", modelId: "gpt-4o" })).toBe("openai:gpt-4o");
    expect(modelName({ provider: "openai.responses", modelId: "o3" })).toBe("openai:o3");
    expect(modelName({ provider: "anthropic.messages", modelId: "claude-sonnet-4-5" })).toBe(
      "anthropic:claude-sonnet-4-5",
    );
    expect(modelName({ provider: "openai-compatible.chat", modelId: "llama3" })).toBe(
      "openai-compatible:llama3",
    );
  });

  it("is scripted:<model id> for a script, and the recorded model's for a replay", () => {
    expect(modelName({ provider: "stagechart.scripted", modelId: "review.script.yaml" })).toBe(
      "scripted:review.script.yaml",
    );
    expect(modelName({ provider: "stagechart.replay", modelId: "openai.chat:gpt-4o-mini" })).toBe(
      "openai:gpt-4o-mini",
    );
  });
});

describe("a model's price", () => {
  it("is its own entry, else the longest entry its name extends with a dash", () => {
    expect(priceOf(BUNDLED_PRICES, "openai:gpt-4o")).toEqual(BUNDLED_PRICES["openai:gpt-4o"]);
    expect(priceOf(BUNDLED_PRICES, "openai:gpt-4o-2024-08-06")).toBe(
      BUNDLED_PRICES["openai:gpt-4o"],
    );
    expect(priceOf(BUNDLED_PRICES, "openai:gpt-4o-mini-2024-07-18")).toBe(
      BUNDLED_PRICES["openai:gpt-4o-mini"],
    );
    expect(priceOf(BUNDLED_PRICES, "anthropic:claude-opus-4-1-20250805")).toBe(
      BUNDLED_PRICES["anthropic:claude-opus-4-1"],
    );
    expect(priceOf(BUNDLED_PRICES, "anthropic:claude-opus-4-20250514")).toBe(
      BUNDLED_PRICES["anthropic:claude-opus-4"],
    );
  });

  it("is unknown for a model no entry names, nor one a name only starts like", () => {
    expect(priceOf(BUNDLED_PRICES, "openai:gpt-4ox")).toBeUndefined();
    expect(priceOf(BUNDLED_PRICES, "scripted:review.script.yaml")).toBeUndefined();
    expect(pricingOf({ provider: "stagechart.scripted", modelId: "x" })).toEqual({
      model: "scripted:x",
    });
  });

  it("can be given or overridden over the bundled table", () => {
    const table = { "openai:gpt-4o": { input: 1, output: 2 } };
    expect(pricingOf({ provider: "openai.chat", modelId: "gpt-4o" }, table)).toEqual({
      model: "openai:gpt-4o",
      price: { input: 1, output: 2 },
    });
  });
});

describe("a call's cost", () => {
  it("is its input and output tokens at the model's price per million", () => {
    expect(
      costOf({ input: 2.5, output: 10 }, { inputTokens: 1000, outputTokens: 200 }),
    ).toBeCloseTo(0.0045, 12);
  });

  it("charges cached input at the cached rate, or at the input rate when there is none", () => {
    const tokens = { inputTokens: 1000, outputTokens: 0, cachedInputTokens: 800 };
    expect(costOf({ input: 3, output: 15, cachedInput: 0.3 }, tokens)).toBeCloseTo(
      (200 * 3 + 800 * 0.3) / 1e6,
      12,
    );
    expect(costOf({ input: 3, output: 15 }, tokens)).toBeCloseTo(0.003, 12);
  });

  it("is nothing for a reply that reports no tokens", () => {
    expect(costOf({ input: 3, output: 15 }, {})).toBe(0);
  });
});

describe("a price file", () => {
  const write = (text: string) => {
    const file = join(tempDir(), "prices.yaml");
    writeFileSync(file, text);
    return file;
  };

  it("reads YAML and JSON entries of US dollars per million tokens", () => {
    const yaml = write("openai-compatible:llama3: {input: 0.2, output: 0.4}\n");
    expect(loadPriceFile(yaml)).toEqual({
      ok: true,
      value: { "openai-compatible:llama3": { input: 0.2, output: 0.4 } },
    });
    const json = write('{"scripted:a.yaml": {"input": 1, "output": 2, "cachedInput": 0.5}}');
    expect(loadPriceFile(json)).toEqual({
      ok: true,
      value: { "scripted:a.yaml": { input: 1, output: 2, cachedInput: 0.5 } },
    });
  });

  it("is refused with the entry and line of a negative price, an unknown field or a bad name", () => {
    const file = write(
      "openai:gpt-4o: {input: 2.5, output: 10}\nopenai:gpt-x: {input: -1, output: 1}\ngpt-4o: {input: 1, output: 1}\nopenai:o9: {input: 1, ouptut: 1}\n",
    );
    const loaded = loadPriceFile(file);
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.error.code).toBe("Validation/PriceFileInvalid");
    expect(loaded.error.message).toContain("openai:gpt-x.input (line 2): must not be negative");
    expect(loaded.error.message).toContain(
      "gpt-4o (line 3): must name a model as <provider>:<model id>",
    );
    expect(loaded.error.message).toMatch(/openai:o9 \(line 4\)/);
  });

  it("is refused with a code when it is missing or not YAML", () => {
    const missing = loadPriceFile(join(tempDir(), "none.yaml"));
    expect(missing.ok || missing.error.code).toBe("Validation/PriceFileInvalid");
    expect(missing.ok || missing.error.message).toMatch(/cannot read the price file/);
    const broken = loadPriceFile(write("openai:gpt-4o: {input: [\n"));
    expect(broken.ok || broken.error.message).toMatch(/is not valid YAML or JSON \(line \d+\)/);
  });
});

describe("a model turn's cost", () => {
  let server: LlmServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("is audited with the turn, at the hosted model's bundled price, cached input included", async () => {
    server = await startLlmServer([
      {
        toolCalls: [{ name: "submit_plan", args: { summary: "s", steps: ["a"] } }],
        usage: { input: 1200, output: 30, cachedInput: 1000 },
      },
    ]);
    const model = await hostedModel("openai:gpt-4o-mini", {
      OPENAI_API_KEY: TEST_KEY,
      OPENAI_BASE_URL: `${server.origin}/v1`,
    });
    const h = modelHarness(model);
    await runStage(h.host, stageInput(loadStage("plan")));
    const [turn] = h.audit.events.filter((e) => e.type === "ModelTurn");
    expect(turn?.payload).toMatchObject({
      model: "openai:gpt-4o-mini",
      usage: { inputTokens: 1200, outputTokens: 30, cachedInputTokens: 1000 },
    });
    expect(turn?.payload.costUsd).toBeCloseTo((200 * 0.15 + 1000 * 0.075 + 30 * 0.6) / 1e6, 12);
  });

  it("is left out for a model without a price, whose name the turn still gives", async () => {
    const model = createScriptedModel(
      {
        file: "plan.script.yaml",
        stages: new Map([
          [
            "plan",
            [
              {
                reply: {
                  kind: "tool-calls",
                  calls: [{ tool: "submit_plan", args: { summary: "s", steps: ["a"] } }],
                },
                usage: { inputTokens: 100, outputTokens: 10 },
                delayMs: 0,
              },
            ],
          ],
        ]),
      },
      {},
    );
    const unpriced = modelHarness(model);
    await runStage(unpriced.host, stageInput(loadStage("plan")));
    const [turn] = unpriced.audit.events.filter((e) => e.type === "ModelTurn");
    expect(turn?.payload.model).toBe("scripted:plan.script.yaml");
    expect(turn?.payload).not.toHaveProperty("costUsd");
  });
});
