import { afterEach, describe, expect, it } from "vitest";
import { resolveModelSpec } from "../../src/models/spec.js";
import { runStage } from "../../src/runtime/run-stage.js";
import { compatibleModel, hostedModel } from "../support/hosted-models.js";
import { type LlmServer, startLlmServer } from "../support/llm-server.js";
import { loadStage, modelHarness, stageInput } from "../support/stage-harness.js";

const plan = loadStage("plan");
const fastRetries = { providerRetryDelayMs: 1 };

let server: LlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a server that refuses tool calling for the model", () => {
  it.each<[string, { status: number; message: string }]>([
    [
      "Ollama",
      { status: 400, message: "registry.ollama.ai/library/gemma:2b does not support tools" },
    ],
    [
      "vLLM without auto tool choice",
      {
        status: 400,
        message:
          '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
      },
    ],
    [
      "llama.cpp server without --jinja",
      { status: 500, message: "tools param requires --jinja flag" },
    ],
    ["another server", { status: 422, message: "Function calling is not supported by this model" }],
  ])("fails the stage at its first turn with MissingToolCalling: %s", async (_, refusal) => {
    server = await startLlmServer([refusal]);
    const h = modelHarness(await compatibleModel(server), { limits: fastRetries });

    const result = await runStage(h.host, stageInput(plan));

    expect(result).toMatchObject({
      verdict: "fail",
      error: { code: "ProviderCapability/MissingToolCalling", context: { modelId: "test-model" } },
    });
    expect(result.error?.message).toContain("test-model");
    expect(result.error?.message).toContain("pick a model with tool calling");
    expect(result.error?.message).toContain(refusal.message);
    // not retried, even when the server sent it as a 5xx
    expect(server.requests).toHaveLength(1);
  });

  it("still rejects other 400s as ProviderRejected", async () => {
    server = await startLlmServer([{ status: 400, message: "tool_choice: unknown value" }]);
    const h = modelHarness(await compatibleModel(server));
    const result = await runStage(h.host, stageInput(plan));
    expect(result.error?.code).toBe("ExtensionHost/ProviderRejected");
  });
});

describe("an openai-compatible spec declaring the model has no tool calling", () => {
  it("fails the stage before any request with ?tools=false", async () => {
    server = await startLlmServer([]);
    const model = await hostedModel(
      `openai-compatible:${server.origin}/v1#gemma:2b?tools=false`,
      {},
    );
    const h = modelHarness(model);

    const result = await runStage(h.host, stageInput(plan));

    expect(model.capabilities).toEqual({ toolCalling: false, streaming: true });
    expect(model.model.modelId).toBe("gemma:2b");
    expect(result.error).toMatchObject({
      code: "ProviderCapability/MissingToolCalling",
      message: expect.stringContaining("gemma:2b"),
    });
    expect(h.types()).not.toContain("ModelTurn");
    expect(server.requests).toHaveLength(0);
  });

  it("takes ?tools=true, the default, and refuses any other option", async () => {
    const base = "openai-compatible:http://localhost:11434/v1#llama3.1";
    const yes = await resolveModelSpec(`${base}?tools=true`, {});
    expect(yes.ok && yes.value.capabilities).toEqual({ toolCalling: true, streaming: true });
    expect(yes.ok && yes.value.model.modelId).toBe("llama3.1");
    for (const option of ["?tools=no", "?tool=false", "?tools=false&x=1", "?"]) {
      const resolved = await resolveModelSpec(`${base}${option}`, {});
      expect(resolved, option).toMatchObject({
        ok: false,
        error: { code: "Validation/ModelSpecInvalid" },
      });
    }
  });
});
