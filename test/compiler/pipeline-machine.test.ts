import { describe, expect, it } from "vitest";
import { startRun } from "../../src/runtime/run.js";
import { code, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";

describe("the compiled pipeline machine", () => {
  it("a rule that leads a stage back to itself runs it again as a new execution", async () => {
    const h = harness("stages: {}");
    let runs = 0;
    const pipeline = pipelineOf({
      stages: [
        code("again", () => {
          runs += 1;
          return { verdict: "ok", output: { run: runs } };
        }),
      ],
      next: {
        again: {
          kind: "rules",
          rules: [{ when: { visits: "again", op: "lt", value: 3 }, to: "again" }, { to: "done" }],
        },
      },
    });
    const run = await startRun(pipeline, { host: h.host, runId: "run-1" });
    if (!run.ok) throw run.error;
    const result = await run.value.result;
    expect(result.status).toBe("done");
    expect(runs).toBe(3);
    const executions = h.audit
      .of("run-1")
      .filter((e) => e.type === "StageExited")
      .map((e) => e.stageExecutionId);
    expect(executions).toEqual(["run-1/again/1", "run-1/again/2", "run-1/again/3"]);
  });

  it("a run's output is its last stage's, even when an earlier stage ran again later", async () => {
    const h = harness("stages: {}");
    let tries = 0;
    const pipeline = pipelineOf({
      stages: [
        code("work", () => {
          tries += 1;
          return { verdict: "ok", output: { stage: "work", try: tries } };
        }),
        code("check", () => ({ verdict: "ok", output: { stage: "check", passed: tries > 1 } })),
        code("fix", () => ({ verdict: "ok", output: { stage: "fix" } })),
      ],
      next: {
        work: "check",
        check: {
          kind: "rules",
          rules: [
            { when: { path: "output.passed", op: "equals", value: false }, to: "fix" },
            { to: "done" },
          ],
        },
        fix: "work",
      },
    });
    const run = await startRun(pipeline, { host: h.host, runId: "run-1" });
    if (!run.ok) throw run.error;
    // work, check, fix, work, check: check ran last, though fix was the last one recorded first.
    expect((await run.value.result).output).toEqual({ stage: "check", passed: true });
  });

  it("tells each stage how many stage executions the run entered before it, through sub-pipelines, repeats and parallel groups", async () => {
    const h = harness("stages: {}");
    const told: string[] = [];
    const noting = (id: string) =>
      code(id, ({ ctx }) => {
        told.push(`${ctx.stageExecutionId.slice("run-1/".length)}: ${ctx.stagesBefore}`);
        return { verdict: "ok" };
      });
    const inner = pipelineOf({ id: "inner", stages: [noting("x"), noting("y")], next: { x: "y" } });
    const lone = pipelineOf({ id: "lone", stages: [noting("z")] });
    const pipeline = pipelineOf({
      stages: [
        noting("a"),
        { kind: "pipeline", id: "sub", pipeline: inner },
        noting("b"),
        noting("p"),
        { kind: "pipeline", id: "q", pipeline: lone },
        noting("last"),
      ],
      next: {
        a: "sub",
        sub: "b",
        b: {
          kind: "rules",
          rules: [{ when: { visits: "b", op: "lt", value: 2 }, to: "sub" }, { to: "p" }],
        },
        p: { kind: "parallel", siblings: ["q"], join: "last", policy: { kind: "all-settled" } },
      },
    });
    const run = await startRun(pipeline, { host: h.host, runId: "run-1" });
    if (!run.ok) throw run.error;
    expect((await run.value.result).status).toBe("done");
    expect(told).toEqual([
      "a/1: 0",
      "sub/1/x/1: 1",
      "sub/1/y/1: 2",
      "b/1: 3",
      "sub/2/x/1: 4", // the sub-pipeline again: its own visits start over, the run's count does not
      "sub/2/y/1: 5",
      "b/2: 6",
      "p/1: 7",
      "q/1/z/1: 8",
      "last/1: 9",
    ]);
  });
});
