import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineDefinition, PipelineStage } from "../../src/definitions/pipeline-types.js";
import type { AuditEvent } from "../../src/events/audit.js";
import { parseScript } from "../../src/models/script-file.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import type { ModelHandle } from "../../src/models/types.js";
import { createHost } from "../../src/runtime/host.js";
import { type RunHandle, resumeRun, startRun } from "../../src/runtime/run.js";
import type { StageSlotPool } from "../../src/runtime/stage-slots.js";
import { SqliteStore } from "../../src/store/index.js";
import { callsThrough } from "../support/delayed-scripts.js";
import { code, llm, pipelineOf, waits } from "../support/pipelines.js";
import { modelHarness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

/** Every test and lint turn answers after `delayMs`: long enough for the stages to overlap. */
const checksScript = (delayMs: number) => `
stages:
  test:
    - tool: submit_test
      args: { passed: true, summary: "fine", failures: [] }
      delayMs: ${delayMs}
  lint:
    - tool: submit_lint
      args: { clean: true, issues: [] }
      delayMs: ${delayMs}
`;

/** A model that counts its calls in flight, and the most that were at once. */
function peakCounting(handle: ModelHandle): { handle: ModelHandle; peak: () => number } {
  let inFlight = 0;
  let peak = 0;
  const counted = async <T>(call: () => PromiseLike<T>): Promise<T> => {
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    try {
      return await call();
    } finally {
      inFlight -= 1;
    }
  };
  return { peak: () => peak, handle: callsThrough(handle, counted) };
}

function scripted(script: string): ModelHandle {
  const parsed = parseScript(script, "checks.script.yaml");
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  return createScriptedModel(parsed.value);
}

/** `fan` then test and lint side by side (a group capped at 2), as a stage of the outer group. */
const checks = (id: string): PipelineStage => ({
  kind: "pipeline",
  id,
  pipeline: pipelineOf({
    id: `checks-${id}`,
    stages: [code("fan", () => ({ verdict: "ok" })), llm("test"), llm("lint")],
    next: {
      fan: {
        kind: "parallel",
        siblings: ["test", "lint"],
        join: "done",
        policy: { kind: "fail-fast" },
        maxConcurrency: 2,
      },
    },
  }),
});

/** Two groups nested in a group: four LLM stages that may all run at once. */
const nestedGroups = (): PipelineDefinition =>
  pipelineOf({
    id: "nested",
    stages: [code("start", () => ({ verdict: "ok" })), checks("left"), checks("right")],
    next: {
      start: {
        kind: "parallel",
        siblings: ["left", "right"],
        join: "done",
        policy: { kind: "all-settled" },
        maxConcurrency: 2,
      },
    },
  });

function started(handle: Awaited<ReturnType<typeof startRun>>): RunHandle {
  if (!handle.ok) throw handle.error;
  return handle.value;
}

/** The most stage executions between their StageSetup and their StageExited at once. */
function peakOfStages(events: readonly AuditEvent[]): number {
  const working = new Set<string>();
  let peak = 0;
  for (const event of events) {
    if (event.stageExecutionId === undefined) continue;
    if (event.type === "StageSetup") working.add(event.stageExecutionId);
    if (event.type === "StageExited" || event.type === "StageCancelled")
      working.delete(event.stageExecutionId);
    peak = Math.max(peak, working.size);
  }
  return peak;
}

describe("the session's parallel stage cap", () => {
  it("holds nested groups to the cap across sub-pipelines; without it they run all at once", async () => {
    for (const [cap, expected] of [
      [2, 2],
      [undefined, 4],
    ] as const) {
      const counting = peakCounting(scripted(checksScript(60)));
      const h = modelHarness(counting.handle, {
        ...(cap !== undefined && { limits: { maxParallelStages: cap } }),
      });
      const run = started(
        await startRun(nestedGroups(), { host: h.host, runId: "run-1", task: "t" }),
      );
      const result = await run.result;
      expect(result.status, JSON.stringify(result.error)).toBe("done");
      expect(counting.peak(), `cap ${cap}`).toBe(expected);
      const llmStages = h.audit.events.filter((e) => e.stageId === "test" || e.stageId === "lint");
      expect(peakOfStages(llmStages), `cap ${cap}`).toBe(expected);
      expect(h.audit.events.filter((e) => e.type === "StageExited")).toHaveLength(4 + 3);
    }
  });

  it("counts code and command stages too, and gives every slot back however a stage ends", async () => {
    const h = modelHarness(scripted("stages: {}"), { limits: { maxParallelStages: 1 } });
    const slots = h.host.stageSlots as StageSlotPool;
    let working = 0;
    let peak = 0;
    const tracked = (id: string, verdict: "ok" | "fail") =>
      code(id, async () => {
        working += 1;
        peak = Math.max(peak, working);
        await new Promise((resolve) => setTimeout(resolve, 10));
        working -= 1;
        if (verdict === "fail") throw new Error(`${id} crashed`);
        return { verdict };
      });
    const group = (siblings: PipelineStage[]) =>
      pipelineOf({
        stages: [code("start", () => ({ verdict: "ok" })), ...siblings],
        next: {
          start: {
            kind: "parallel",
            siblings: siblings.map((stage) => stage.id),
            join: "done",
            policy: { kind: "all-settled" },
          },
        },
      });
    const settled = await started(
      await startRun(group([tracked("a", "ok"), tracked("b", "fail"), tracked("c", "ok")]), {
        host: h.host,
        runId: "run-1",
      }),
    ).result;
    expect(settled.status).toBe("done");
    expect(peak).toBe(1);
    expect(slots.inUse).toBe(0);

    // A run cancelled while one stage works and another waits for its slot leaves none taken.
    const cancelled = started(
      await startRun(group([waits("x", 5000), waits("y", 5000)]), { host: h.host, runId: "run-2" }),
    );
    await until(() => slots.inUse === 1);
    cancelled.send({ type: "CANCEL" });
    expect((await cancelled.result).status).toBe("cancelled");
    expect(slots.inUse).toBe(0);
    expect(h.audit.of("run-2").some((e) => e.type === "StageSetup" && e.stageId === "y")).toBe(
      false,
    );
  });

  // Were the slot kept, the run would wait for it forever: a stage waiting for a slot is working.
  it("a stage parked on a question gives its slot back, so the others run and the run suspends", {
    timeout: 10_000,
  }, async () => {
    const h = modelHarness(
      scripted(`
stages:
  plan:
    - tool: Edit
      args: { path: src/auth.ts, old: "'a'", new: "'b'" }
  test:
    - tool: submit_test
      args: { passed: true, summary: "fine", failures: [] }
`),
      { limits: { maxParallelStages: 1 }, unansweredGrants: "suspend" },
    );
    const pipeline = pipelineOf({
      stages: [code("start", () => ({ verdict: "ok" })), llm("plan"), llm("test")],
      next: {
        start: {
          kind: "parallel",
          siblings: ["plan", "test"],
          join: "done",
          policy: { kind: "all-settled" },
        },
      },
    });
    const store = openStore();
    const result = await started(
      await startRun(pipeline, { host: h.host, store, runId: "run-1", task: "t" }),
    ).result;
    expect(result.status).toBe("suspended");
    expect(result.waiting).toMatchObject([{ kind: "grant", stageId: "plan", tool: "Edit" }]);
    expect(result.results.test).toMatchObject({ verdict: "ok" });
    expect((h.host.stageSlots as StageSlotPool).inUse).toBe(0);
  });

  it("a resumed run takes its slots afresh, from what its restored stages still do", async () => {
    const file = join(tempDir(), "runs.db");
    const counting = () => peakCounting(scripted(checksScript(400)));
    const first = counting();
    const before = modelHarness(first.handle, { limits: { maxParallelStages: 2 } });
    const run = started(
      await startRun(nestedGroups(), {
        host: before.host,
        store: openStore(file),
        runId: "run-1",
        task: "t",
      }),
    );
    await until(() => first.peak() >= 2);
    run.stop();
    expect((await run.result).status).toBe("suspended");
    expect((before.host.stageSlots as StageSlotPool).inUse).toBe(0);

    const second = counting();
    const after = modelHarness(second.handle, { limits: { maxParallelStages: 2 } });
    const resumed = await resumeRun(nestedGroups(), "run-1", {
      host: after.host,
      store: openStore(file),
    });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
    expect(second.peak()).toBe(2);
    expect((after.host.stageSlots as StageSlotPool).inUse).toBe(0);
  });

  it("is a whole number of at least 1, or Infinity: anything else is Validation/HostLimitInvalid", () => {
    const host = (maxParallelStages: number) => () =>
      createHost({
        model: scripted("stages: {}"),
        audit: { emit: () => ({}) as AuditEvent },
        limits: { maxParallelStages },
      });
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(host(bad)).toThrow(expect.objectContaining({ code: "Validation/HostLimitInvalid" }));
    expect(host(Number.POSITIVE_INFINITY)().stageSlots).toBeUndefined();
    expect(host(3)().limits.maxParallelStages).toBe(3);
  });
});

function openStore(file = join(tempDir(), "runs.db")): SqliteStore {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}
