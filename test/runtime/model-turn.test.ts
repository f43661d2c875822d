import { describe, expect, it } from "vitest";
import type { ModelHandle } from "../../src/models/types.js";
import { runStage } from "../../src/runtime/run-stage.js";
import { harness, loadStage, stageInput } from "../support/stage-harness.js";

const THREE_TURNS = `
stages:
  plan:
    - tool: Grep
      args: { pattern: auth }
    - tool: Grep
      args: { pattern: token }
    - tool: submit_plan
      args: { summary: "Split the module", steps: ["extract", "test"] }
`;

/** The model's calls, each with the abort signal it was given. */
function watchSignals(model: ModelHandle): AbortSignal[] {
  const signals: AbortSignal[] = [];
  const doGenerate = model.model.doGenerate.bind(model.model);
  model.model.doGenerate = (call) => {
    if (call.abortSignal) signals.push(call.abortSignal);
    return doGenerate(call);
  };
  return signals;
}

describe("a model call's timeout", () => {
  it("reuses one signal across a stage's calls when the model leaves no listener on it", async () => {
    const h = harness(THREE_TURNS);
    const signals = watchSignals(h.host.model);

    const result = await runStage(h.host, stageInput(loadStage("plan")));

    expect(result.verdict).toBe("ok");
    expect(signals).toHaveLength(3);
    expect(new Set(signals).size).toBe(1);
    expect(signals[0]?.aborted).toBe(false);
  });

  it("gives each call a signal of its own when the model does not say it releases them", async () => {
    // A provider may listen on a signal derived from the call's (AbortSignal.any), which no
    // listener count on the call's own signal shows: only models that say so get one reused.
    const h = harness(THREE_TURNS);
    const { releasesSignal: _, ...unsaid } = h.host.model;
    const host = { ...h.host, model: unsaid };
    const signals = watchSignals(unsaid);

    await runStage(host, stageInput(loadStage("plan")));

    expect(signals).toHaveLength(3);
    expect(new Set(signals).size).toBe(3);
  });

  it("gives each call a signal of its own when the model keeps listening to the last one", async () => {
    const h = harness(THREE_TURNS);
    const signals = watchSignals(h.host.model);
    const doGenerate = h.host.model.model.doGenerate;
    h.host.model.model.doGenerate = (call) => {
      call.abortSignal?.addEventListener("abort", () => {});
      return doGenerate(call);
    };

    await runStage(h.host, stageInput(loadStage("plan")));

    expect(new Set(signals).size).toBe(3);
  });
});

describe("a stage's tool manifest", () => {
  it("is built once for all the calls of a stage execution", async () => {
    const h = harness(THREE_TURNS);
    const manifests: unknown[] = [];
    const doGenerate = h.host.model.model.doGenerate.bind(h.host.model.model);
    h.host.model.model.doGenerate = (call) => {
      manifests.push(call.tools);
      return doGenerate(call);
    };

    await runStage(h.host, stageInput(loadStage("plan")));

    expect(manifests).toHaveLength(3);
    expect(new Set(manifests).size).toBe(1);
    expect((manifests[0] as { name: string }[]).map((tool) => tool.name)).toEqual([
      "Read",
      "Grep",
      "Glob",
      "submit_plan",
    ]);
  });
});

describe("a model turn's audit event", () => {
  it("says how long the model call took, on the host's clock", async () => {
    let now = 1_000;
    const h = harness(THREE_TURNS, { clock: { now: () => now } });
    const doGenerate = h.host.model.model.doGenerate.bind(h.host.model.model);
    let call = 0;
    h.host.model.model.doGenerate = async (options) => {
      call++;
      // The second call takes 750 ms of the host's clock; the others none.
      if (call === 2) now += 750;
      return doGenerate(options);
    };

    await runStage(h.host, stageInput(loadStage("plan")));

    const turns = h.audit.events.filter((e) => e.type === "ModelTurn").map((e) => e.payload);
    expect(turns.map((t) => [t.turn, t.durationMs])).toEqual([
      [1, 0],
      [2, 750],
      [3, 0],
    ]);
  });
});
