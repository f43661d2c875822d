import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { AuditEvent, AuditEventType } from "../../src/events/audit.js";
import { type ComparedRun, diffRuns, type RunDiff } from "../../src/inspect/run-diff.js";
import { demoProject, REPO_ROOT, runCli, storeOf, summaryOf } from "../support/cli.js";
import { openStore } from "../support/live-runs.js";

const TASK = ["--task", "rename auth to authentication"];

/** The bundled script of code-review-parallel with plan's first call (an Edit it may not make) gone. */
function planWithoutEdit(dir: string): string {
  const script = readFileSync(join(REPO_ROOT, "machines/code-review-parallel.script.yaml"), "utf8");
  const changed = script.replace(
    / {2}plan:\n( {4}#.*\n)? {4}- tool: Edit\n {6}args: .*\n/,
    "  plan:\n",
  );
  expect(changed).not.toBe(script);
  const file = join(dir, "direct-plan.script.yaml");
  writeFileSync(file, changed);
  return file;
}

describe("two runs of one pipeline compared", () => {
  let project: string;
  const cli = (...argv: string[]) =>
    runCli(...argv, "--root", project, "--store", storeOf(project), "--headless", "--json");
  const stored = (runId: string): ComparedRun => {
    const store = openStore(storeOf(project));
    try {
      const run = store.getRun(runId);
      if (!run.ok) throw run.error;
      return { run: run.value, events: store.auditOf(runId), steps: store.stepsOf(runId) };
    } finally {
      store.close();
    }
  };
  const compared = (a: ComparedRun, b: ComparedRun): RunDiff => {
    const diff = diffRuns(a, b);
    if (!diff.ok) throw new Error(diff.error.message);
    return diff.value;
  };
  let first: ComparedRun;
  let second: ComparedRun;
  let direct: ComparedRun;
  beforeAll(async () => {
    project = demoProject();
    const run = async (...flags: string[]) =>
      stored(summaryOf((await cli("run", "code-review-parallel", ...TASK, ...flags)).stdout).runId);
    first = await run();
    second = await run();
    direct = await run("--model", `scripted:${planWithoutEdit(project)}`);
  });

  it("finds no divergence between two runs that took the same path, and gives each stage's figures with b − a", () => {
    const diff = compared(first, second);

    expect(diff.divergence).toBeUndefined();
    expect(diff.forked).toBeUndefined();
    expect(diff.sameDefinition).toBe(true);
    expect(diff.a.visited).toEqual([
      "plan",
      "execute",
      "test",
      "lint",
      "review",
      "code-review-parallel.done",
    ]);
    expect(diff.b.visited).toEqual(diff.a.visited);
    expect(diff.stages.map((s) => s.stage)).toEqual(["plan", "execute", "test", "lint", "review"]);
    const plan = diff.stages[0];
    expect(plan?.a).toMatchObject({ executions: 1, turns: 3 });
    expect(plan?.a?.tokens).toBeGreaterThan(0);
    expect(plan?.tokenDelta).toBe((plan?.b?.tokens ?? 0) - (plan?.a?.tokens ?? 0));
    expect(plan?.durationDeltaMs).toBe((plan?.b?.durationMs ?? 0) - (plan?.a?.durationMs ?? 0));
    expect(diff.durationDeltaMs).toBe(diff.b.durationMs - diff.a.durationMs);
    expect(diff.tokenDelta).toBe(diff.b.tokens - diff.a.tokens);
  });

  it("names the first event where the paths part, in each run, with the step that stored it", () => {
    const diff = compared(first, direct);

    const turnOf = (run: ComparedRun) =>
      run.events.find((e) => e.type === "ModelTurn" && e.stageId === "plan");
    const stepOf = (run: ComparedRun, seq = 0) => run.steps.find((s) => s.lastSeq >= seq)?.step;
    expect(diff.divergence).toEqual({
      a: {
        seq: turnOf(first)?.seq,
        step: stepOf(first, turnOf(first)?.seq),
        stage: "plan",
        text: "plan: turn 1 · calls Edit",
      },
      b: {
        seq: turnOf(direct)?.seq,
        step: stepOf(direct, turnOf(direct)?.seq),
        stage: "plan",
        text: "plan: turn 1 · calls Grep",
      },
    });
    const plan = diff.stages.find((s) => s.stage === "plan");
    expect([plan?.a?.turns, plan?.b?.turns]).toEqual([3, 2]);
    expect(plan?.tokenDelta).toBe((plan?.b?.tokens ?? 0) - (plan?.a?.tokens ?? 0));
    expect(plan?.tokenDelta).toBeLessThan(0);
  });

  it("compares a fork with its source from the step it was forked at, and counts the stages before it as the source's", async () => {
    const exited = first.events.find((e) => e.type === "StageExited" && e.stageId === "plan");
    const at = first.steps.find((s) => s.lastSeq >= (exited?.seq ?? 0))?.step ?? 0;
    const forked = await runCli(
      ...["fork", first.run.runId, "--at", String(at), "--set", "task=rename auth to authn"],
      ...["--store", storeOf(project), "--headless", "--json"],
    );
    const fork = stored(summaryOf(forked.stdout).runId);

    const diff = compared(first, fork);

    expect(diff.forked).toEqual({ source: "a", step: at, set: { task: "rename auth to authn" } });
    expect(diff.divergence).toBeUndefined();
    expect(diff.b.visited).toEqual(diff.a.visited);
    const plan = diff.stages.find((s) => s.stage === "plan");
    expect(plan?.a).toBeDefined();
    expect(plan?.b).toBeUndefined();
    expect(plan?.durationDeltaMs).toBeUndefined();
    // The other way round, the same.
    expect(compared(fork, first).forked).toEqual({ ...diff.forked, source: "b" });
  });

  it("refuses two runs of different pipelines, saying which is which", async () => {
    const other = stored(summaryOf((await cli("run", "code-review", ...TASK)).stdout).runId);

    const diff = diffRuns(first, other);

    expect(diff).toEqual({
      ok: false,
      error: {
        code: "Validation/ComparePipelinesDiffer",
        message: `run ${first.run.runId} is of pipeline code-review-parallel and run ${other.run.runId} of code-review: only runs of the same pipeline compare`,
        context: { a: first.run.runId, b: other.run.runId },
      },
    });
  });
});

describe("the paths compared", () => {
  const T0 = Date.parse("2026-11-25T10:00:00.000Z");
  const runOf = (
    runId: string,
    events: Array<[AuditEventType, string | undefined, Record<string, unknown>?]>,
  ): ComparedRun => ({
    run: { runId, pipelineId: "p", status: "done", definitionHash: "h" },
    events: events.map(([type, stage, payload = {}], i) => ({
      seq: i + 1,
      at: new Date(T0 + i).toISOString(),
      type,
      runId,
      ...(stage && { stageId: stage, stageExecutionId: `${runId}/${stage}/1` }),
      payload,
    })) as AuditEvent[],
    steps: events.map((_, i) => ({ step: i + 1, lastSeq: i + 1 })),
  });
  const turn = (tools: string[]) => ({ turn: 1, outcome: "completion", tools });

  it("are the same when parallel siblings' events interleave differently", () => {
    const a = runOf("a", [
      ["StageSetup", "test"],
      ["StageSetup", "lint"],
      ["ModelTurn", "test", turn(["submit_test"])],
      ["ModelTurn", "lint", turn(["submit_lint"])],
      ["StageExited", "test", { verdict: "ok" }],
      ["StageExited", "lint", { verdict: "ok" }],
      ["RunCompleted", undefined],
    ]);
    const b = runOf("b", [
      ["StageSetup", "test"],
      ["StageSetup", "lint"],
      ["ModelTurn", "lint", turn(["submit_lint"])],
      ["StageExited", "lint", { verdict: "ok" }],
      ["ModelTurn", "test", turn(["submit_test"])],
      ["StageExited", "test", { verdict: "ok" }],
      ["RunCompleted", undefined],
    ]);

    const diff = diffRuns(a, b);

    expect(diff.ok && diff.value.divergence).toBeUndefined();
  });

  it("part where one run ended and the other went on", () => {
    const a = runOf("a", [
      ["StageSetup", "plan"],
      ["StageExited", "plan", { verdict: "fail" }],
      ["RunFailed", undefined],
    ]);
    const b = runOf("b", [
      ["StageSetup", "plan"],
      ["StageExited", "plan", { verdict: "ok" }],
      ["SMTransition", undefined, { pipelineId: "p", from: "plan", to: "review" }],
    ]);

    const diff = diffRuns(a, b);

    expect(diff.ok && diff.value.divergence).toEqual({
      a: { seq: 2, step: 2, stage: "plan", text: "plan: exited fail" },
      b: { seq: 2, step: 2, stage: "plan", text: "plan: exited ok" },
    });
    const shorter = diffRuns(runOf("a", [["StageSetup", "plan"]]), b);
    expect(shorter.ok && shorter.value.divergence).toEqual({
      b: { seq: 2, step: 2, stage: "plan", text: "plan: exited ok" },
    });
  });
});
