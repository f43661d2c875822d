import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type {
  AssertHookInput,
  ExitHookInput,
  StageHooks,
  StageResult,
} from "../../src/definitions/contract.js";
import { loadPipelineFile } from "../../src/definitions/index.js";
import { startRun } from "../../src/runtime/run.js";
import { runStage } from "../../src/runtime/run-stage.js";
import { MemoryTranscripts } from "../../src/runtime/transcripts.js";
import { loaded, project } from "../support/pipeline-files.js";
import { code, llm, pipelineOf } from "../support/pipelines.js";
import { harness, loadStage, stageInput } from "../support/stage-harness.js";

/** Attempt 1: a payload the schema rejects, then one Assert retries; attempt 2: a good one. */
const TWO_ATTEMPTS = `
stages:
  plan:
    - tool: submit_plan
      args: { summary: "no steps yet" }
    - tool: submit_plan
      args: { summary: "first", steps: [] }
    - tool: submit_plan
      args: { summary: "second", steps: ["extract"] }
`;

const PLAN_OK = `
stages:
  plan:
    - tool: submit_plan
      args: { summary: "Split the module", steps: ["extract", "test"] }
`;

/** Counts the reads of a whole transcript (model turns read up to their own position). */
class CountingTranscripts extends MemoryTranscripts {
  wholeReads = 0;
  override read(stageExecutionId: string, before?: string) {
    if (before === undefined) this.wholeReads += 1;
    return super.read(stageExecutionId, before);
  }
}

describe("the Assert hook", () => {
  it("receives {parsed, transcript, attempts}, each parse error on ctx.attempts[i].parseError", async () => {
    const seen: AssertHookInput[] = [];
    const transcripts = new CountingTranscripts();
    const hooks: Record<string, StageHooks> = {
      plan: {
        assert: (input) => {
          seen.push(structuredClone(input));
          return (input.parsed as { steps: string[] }).steps.length === 0
            ? { verdict: "retry", reason: "a plan needs steps" }
            : { verdict: "ok" };
        },
      },
    };
    const h = harness(TWO_ATTEMPTS, { hooks, transcripts });
    const result = await runStage(h.host, stageInput(loadStage("plan")));

    expect(result).toMatchObject({ verdict: "ok", attemptCount: 2 });
    expect(seen).toHaveLength(2);
    const [first, second] = seen as [AssertHookInput, AssertHookInput];
    const parseError = { turn: 1, errors: [expect.stringContaining("steps")] };
    expect(first.parsed).toEqual({ summary: "first", steps: [] });
    expect(first.attempts).toEqual([{ attempt: 1, turns: 2, capHit: false, parseError }]);
    expect(first.ctx.attempts).toEqual(first.attempts);
    expect(first.ctx).toMatchObject({ task: "refactor auth module", upstream: [] });
    expect(first.transcript.map((entry) => entry.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
    ]);
    expect(first.transcript[3]).toMatchObject({ tool: "submit_plan", isError: true });

    expect(second.parsed).toEqual({ summary: "second", steps: ["extract"] });
    expect(second.attempts).toEqual([
      {
        attempt: 1,
        turns: 2,
        capHit: false,
        parseError,
        verdict: "retry",
        reason: "a plan needs steps",
      },
      { attempt: 2, turns: 1, capHit: false },
    ]);
    expect(second.ctx.attempts).toEqual(second.attempts);
    expect(second.transcript).toEqual(h.host.transcripts.read("run-1/plan/1"));
    expect(second.transcript.findLast((entry) => entry.role === "user")).toMatchObject({
      text: expect.stringContaining("a plan needs steps"),
    });
    // One read of the whole transcript per Assert (and the one just above), none per turn.
    expect(transcripts.wholeReads).toBe(3);
  });

  it("sees a cap hit on its attempt, with the transcript that led there", async () => {
    const seen: AssertHookInput[] = [];
    const h = harness('stages: { plan: [{ text: "thinking" }, { text: "still thinking" }] }', {
      hooks: {
        plan: {
          assert: (input) => {
            seen.push(structuredClone(input));
            return { verdict: "fail", reason: "gave up" };
          },
        },
      },
    });
    const stage = loadStage("plan", (t) => t.replace("turnCap: 20", "turnCap: 2"));
    const result = await runStage(h.host, stageInput(stage));
    expect(result).toMatchObject({ verdict: "fail", capHit: true });
    expect(seen[0]?.attempts).toEqual([{ attempt: 1, turns: 2, capHit: true }]);
    expect(seen[0]?.parsed).toBeUndefined();
    // the opening turn, then a steering message after each text reply
    expect(seen[0]?.transcript.filter((entry) => entry.role === "user")).toHaveLength(3);
  });
});

describe("the Exit hook", () => {
  it("writes StageResult.output, the reduced summary successors read; parsed stays whole", async () => {
    const seen: ExitHookInput[] = [];
    const h = harness(PLAN_OK, {
      hooks: {
        plan: {
          exit: (input) => {
            seen.push(structuredClone(input));
            const { summary } = input.parsed as { summary: string };
            return { summary };
          },
        },
      },
    });
    const result = await runStage(h.host, stageInput(loadStage("plan")));
    expect(result).toMatchObject({
      verdict: "ok",
      parsed: { summary: "Split the module", steps: ["extract", "test"] },
      output: { summary: "Split the module" },
    });
    expect(seen).toEqual([
      expect.objectContaining({
        verdict: "ok",
        parsed: { summary: "Split the module", steps: ["extract", "test"] },
        attempts: [{ attempt: 1, turns: 1, capHit: false }],
      }),
    ]);
    expect(seen[0]?.transcript[0]).toMatchObject({ role: "system" });
  });

  it("runs only for a stage that passed its Assert; a failed stage's output stays its payload", async () => {
    let exits = 0;
    const h = harness(PLAN_OK, {
      hooks: {
        plan: {
          assert: () => ({ verdict: "fail", reason: "no" }),
          exit: () => {
            exits += 1;
            return null;
          },
        },
      },
    });
    const result = await runStage(h.host, stageInput(loadStage("plan")));
    expect(result).toMatchObject({ verdict: "fail", output: { summary: "Split the module" } });
    expect(exits).toBe(0);
  });

  it("that throws fails the stage with its message; StageExited is still audited", async () => {
    const h = harness(PLAN_OK, {
      hooks: {
        plan: {
          exit: () => {
            throw new Error("cannot summarise");
          },
        },
      },
    });
    const result = await runStage(h.host, stageInput(loadStage("plan")));
    expect(result).toMatchObject({
      verdict: "fail",
      error: { code: "ExtensionHost/LifecycleFailure", message: "cannot summarise" },
    });
    expect(h.types().at(-1)).toBe("StageExited");
  });

  it("hands a successor the reduced output as ctx.upstream[0].output", async () => {
    let received: readonly StageResult[] = [];
    const h = harness(PLAN_OK, {
      hooks: { plan: { exit: ({ parsed }) => ({ steps: (parsed as { steps: string[] }).steps }) } },
    });
    const pipeline = pipelineOf({
      stages: [
        llm("plan"),
        code("next", ({ ctx }) => {
          received = ctx.upstream;
          return { verdict: "ok" };
        }),
      ],
      next: { plan: "next" },
    });
    const run = await startRun(pipeline, { host: h.host, task: "t", runId: "run-1" });
    if (!run.ok) throw run.error;
    expect((await run.value.result).status).toBe("done");
    expect(received[0]?.output).toEqual({ steps: ["extract", "test"] });
  });
});

describe("a YAML stage entry's output", () => {
  it("hands on only the listed fields of the parsed payload", async () => {
    const dir = project({
      "machines/p.yaml": `id: reduced
context: { type: object, properties: { task: { type: string } } }
entry: plan
stages:
  plan: { file: ../stages/plan.md, output: [summary] }
`,
    });
    const pipeline = loaded(await loadPipelineFile(join(dir, "machines/p.yaml")));
    const h = harness(PLAN_OK);
    const run = await startRun(pipeline, { host: h.host, task: "t", runId: "run-1" });
    if (!run.ok) throw run.error;
    const result = await run.value.result;
    expect(result.results.plan).toMatchObject({
      parsed: { summary: "Split the module", steps: ["extract", "test"] },
      output: { summary: "Split the module" },
    });
    expect(result.output).toEqual({ summary: "Split the module" });
  });
});
