import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readCassette } from "../../src/models/cassette.js";
import { recordModel } from "../../src/models/recorder.js";
import { createReplayModel } from "../../src/models/replay.js";
import { runStage } from "../../src/runtime/run-stage.js";
import { type HostedProviderCase, PROVIDERS, providerModel } from "../support/hosted-models.js";
import { type LlmServer, startLlmServer } from "../support/llm-server.js";
import { loadStage, modelHarness, stageInput } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

const plan = loadStage("plan");
const submitPlan = { name: "submit_plan", args: { summary: "Rename auth", steps: ["rename"] } };

/**
 * An idle limit well under the whole-call limit, so which of the two cut a call shows in its
 * code; a trickle is "slow" when its gaps outlast the idle limit, "fast" when they are a fraction
 * of it while the whole reply still takes longer than the idle limit.
 */
const IDLE_MS = 800;
const limits = { providerRetryDelayMs: 1, modelIdleTimeoutMs: IDLE_MS, modelCallTimeoutMs: 4000 };
const SLOW_GAP_MS = 2500;
const FAST_GAP_MS = 100;

let server: LlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const modelTurns = (h: ReturnType<typeof modelHarness>) =>
  h.audit.events.filter((e) => e.type === "ModelTurn").map((e) => e.payload);

const compatible = PROVIDERS.find((p) => p.provider === "openai-compatible") as HostedProviderCase;

describe.each(PROVIDERS)("a $provider server that goes quiet mid-reply", (p) => {
  it("is cut after the idle limit as ProviderTransient/IdleTimeout, and the turn is retried", async () => {
    server = await startLlmServer([
      { toolCalls: [submitPlan], trickleMs: SLOW_GAP_MS },
      { toolCalls: [submitPlan] },
    ]);
    const h = modelHarness(await providerModel(p, server), { limits });

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(server.requests.map((r) => r.aborted)).toEqual([true, false]);
    expect(modelTurns(h)[0]).toMatchObject({
      outcome: "error",
      error: {
        code: "ProviderTransient/IdleTimeout",
        message: `the model call stalled: the server sent nothing more of its reply for ${IDLE_MS} ms`,
      },
    });
  });
});

describe("the idle limit", () => {
  it("leaves the wait for the reply to the call's limit: a server still writing it is not cut", async () => {
    server = await startLlmServer([{ toolCalls: [submitPlan], delayMs: 2 * IDLE_MS }]);
    const h = modelHarness(await providerModel(compatible, server), { limits });

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(server.requests).toHaveLength(1);
  });

  it("never cuts a reply that keeps coming, however long it takes in all", async () => {
    server = await startLlmServer([{ toolCalls: [submitPlan], trickleMs: FAST_GAP_MS }]);
    const h = modelHarness(await providerModel(compatible, server), { limits });
    const started = Date.now();

    const result = await runStage(h.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    expect(Date.now() - started).toBeGreaterThan(IDLE_MS);
    expect(server.requests).toHaveLength(1);
    expect(modelTurns(h).map((turn) => turn.outcome)).not.toContain("error");
  });

  it("is recorded in a cassette as the failure it was, and replays as the same retried failure", async () => {
    server = await startLlmServer([
      { toolCalls: [submitPlan], trickleMs: SLOW_GAP_MS },
      { toolCalls: [submitPlan] },
    ]);
    const file = join(tempDir(), "idle.cassette.json");
    const live = modelHarness(recordModel(await providerModel(compatible, server), file), {
      limits,
    });
    expect((await runStage(live.host, stageInput(plan))).verdict).toBe("ok");

    const cassette = readCassette(file);
    if (!cassette.ok) throw cassette.error;
    const replayed = modelHarness(createReplayModel(cassette.value), { limits });
    const result = await runStage(replayed.host, stageInput(plan));

    expect(result.verdict).toBe("ok");
    const codes = (h: typeof live) =>
      modelTurns(h).map((turn) => (turn.error as { code?: string } | undefined)?.code);
    expect(codes(replayed)).toEqual(["ProviderTransient/IdleTimeout", undefined]);
    expect(codes(replayed)).toEqual(codes(live));
  });
});
