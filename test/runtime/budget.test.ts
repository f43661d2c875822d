import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lookup } from "../../src/compiler/stage-table.js";
import type { StageResult } from "../../src/definitions/contract.js";
import type { PipelineBudget, PipelineStage } from "../../src/definitions/pipeline-types.js";
import { startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

/** `count` Grep turns of `output` tokens each (100 in), then the plan's completion. */
const planScript = (stage: string, count: number, output = 10) => `
stages:
  ${stage}:
${Array.from(
  { length: count },
  () =>
    `    - { tool: Grep, args: { pattern: auth }, usage: { inputTokens: 100, outputTokens: ${output} } }`,
).join("\n")}
    - { tool: submit_plan, args: { summary: s, steps: [a] }, usage: { inputTokens: 100, outputTokens: ${output} } }
`;

const planPipeline = (budget: PipelineBudget, next?: Parameters<typeof pipelineOf>[0]["next"]) =>
  pipelineOf({
    stages: [llm("plan"), code("fallback", () => ({ verdict: "ok", output: { fell: true } }))],
    ...(next && { next }),
    budget,
  });

/** An LLM stage under another id, its definition's too (the scripted model answers by it). */
const renamed = (stage: PipelineStage, id: string): PipelineStage =>
  stage.kind === "llm" ? { ...stage, id, definition: { ...stage.definition, id } } : stage;

const run = async (pipeline: ReturnType<typeof pipelineOf>, h: ReturnType<typeof harness>) => {
  const started = await startRun(pipeline, { host: h.host, runId: "run-1", task: "t" });
  if (!started.ok) throw started.error;
  return started.value.result;
};

describe("a stage's budget", () => {
  it("stops the stage before the model call that would start past it, which is not made", async () => {
    const h = harness(planScript("plan", 5));
    const result = await run(planPipeline({ stages: { plan: { maxOutputTokens: 25 } } }), h);

    // Calls 1-3 spend 10 output tokens each; the fourth would start at 30 of 25.
    const turns = h.audit.events.filter((e) => e.type === "ModelTurn");
    expect(turns.filter((e) => e.payload.outcome !== "error")).toHaveLength(3);
    const [exceeded] = h.audit.events.filter((e) => e.type === "BudgetExceeded");
    expect(exceeded).toMatchObject({
      stageId: "plan",
      payload: { scope: "stage", limit: "maxOutputTokens", max: 25, spent: 30 },
    });
    expect(result.status).toBe("failed");
    const plan = result.results.plan as StageResult;
    expect(plan.verdict).toBe("fail");
    expect(plan.error).toMatchObject({
      code: "Cancellation/BudgetExceeded",
      message:
        "stage plan's budget is spent: 30 output tokens of 25 output tokens (maxOutputTokens); the model call was not made",
    });
  });

  it("gives a failed stage a route on its error code", async () => {
    const h = harness(planScript("plan", 5));
    const result = await run(
      planPipeline(
        { stages: { plan: { maxInputTokens: 150 } } },
        {
          plan: {
            kind: "rules",
            rules: [
              {
                when: { path: "error.code", op: "equals", value: "Cancellation/BudgetExceeded" },
                to: "fallback",
              },
            ],
          },
        },
      ),
      h,
    );
    expect(result.status).toBe("done");
    expect(result.output).toEqual({ fell: true });
    expect(
      h.audit.events.filter((e) => e.type === "ModelTurn" && e.payload.outcome !== "error"),
    ).toHaveLength(2);
  });

  it("counts wall time from the stage execution's start", async () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const h = harness(planScript("plan", 5), { clock: { now: () => (now += 4000) } });
    const result = await run(planPipeline({ stages: { plan: { maxSeconds: 10 } } }), h);
    expect(result.status).toBe("failed");
    const [exceeded] = h.audit.events.filter((e) => e.type === "BudgetExceeded");
    expect(exceeded?.payload).toMatchObject({ scope: "stage", limit: "maxSeconds", max: 10 });
    expect(exceeded?.payload.spent).toBeGreaterThanOrEqual(10);
  });
});

describe("a run's budget", () => {
  it("is shared by parallel siblings: together they stop at it", async () => {
    const h = harness(`${planScript("left", 6)}${planScript("right", 6).replace("stages:\n", "")}`);
    const sibling = (id: string) => renamed(llm("plan"), id);
    const pipeline = pipelineOf({
      stages: [
        code("start", () => ({ verdict: "ok" })),
        sibling("left"),
        sibling("right"),
        code("join", () => ({ verdict: "ok" })),
      ],
      next: {
        start: {
          kind: "parallel",
          siblings: ["left", "right"],
          join: "join",
          policy: { kind: "all-settled" },
        },
      },
      budget: { run: { maxOutputTokens: 45 } },
    });
    await run(pipeline, h);
    const made = h.audit.events.filter(
      (e) => e.type === "ModelTurn" && e.payload.outcome !== "error",
    );
    // Five calls of 10 reach 50 of 45 between them; no sibling makes a sixth.
    expect(made).toHaveLength(5);
    const exceeded = h.audit.events.filter((e) => e.type === "BudgetExceeded");
    expect(exceeded.map((e) => e.payload.scope)).toEqual(["run", "run"]);
  });

  it("counts what a resumed run spent before it was stopped", async () => {
    const file = join(tempDir(), "runs.db");
    const opened = SqliteStore.open(file);
    if (!opened.ok) throw opened.error;
    const store = opened.value;
    const pipeline = pipelineOf({
      stages: [
        llm("plan"),
        code("gate", () => ({ verdict: "ok" })),
        { ...llm("plan"), id: "again" },
      ],
      next: { plan: "gate", gate: "again" },
      budget: { run: { maxOutputTokens: 45 } },
    });
    const script = `${planScript("plan", 2)}${planScript("again", 6).replace("stages:\n", "")}`;
    // The first process stops the run once plan is done (3 calls, 30 tokens).
    const first = harness(script);
    const started = await startRun(pipeline, {
      host: first.host,
      store,
      runId: "run-1",
      task: "t",
    });
    if (!started.ok) throw started.error;
    const handle = started.value;
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const results = handle.actor?.getSnapshot().context.results;
        if (results && lookup(results, "plan")) {
          clearInterval(timer);
          handle.stop();
          resolve();
        }
      }, 1);
    });
    await handle.result;
    const { resumeRun } = await import("../../src/runtime/run.js");
    const second = harness(script);
    const resumed = await resumeRun(pipeline, "run-1", { host: second.host, store });
    if (!resumed.ok) throw resumed.error;
    await resumed.value.result;
    // again may spend what is left: 30 of 45 spent, so two calls (to 50), not five.
    const stored = store.auditOf("run-1");
    // Turns the resume replayed from the journal are audited again: each counted once.
    const made = (stageId: string) =>
      new Set(
        stored
          .filter((e) => e.type === "ModelTurn" && e.stageExecutionId?.includes(`/${stageId}/`))
          .filter((e) => e.payload.outcome !== "error")
          .map((e) => `${e.attempt}/${String(e.payload.turn)}`),
      );
    expect(stored.map((e) => e.type)).toContain("RunResumed");
    expect(made("plan").size).toBe(3);
    expect(made("again").size).toBe(2);
    expect(stored.filter((e) => e.type === "BudgetExceeded").map((e) => e.payload)).toEqual([
      { scope: "run", limit: "maxOutputTokens", max: 45, spent: 50 },
    ]);
    store.close();
  });
});
