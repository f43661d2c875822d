import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PHASES } from "../../machines/task-lifecycle/phases.js";
import { REPO_ROOT, runCli, storeCommand, storeOf, summaryOf } from "../support/cli.js";
import { taskProject } from "../support/task-lifecycle.js";

const TASK = "add slugify to src/slug.js";

const runLifecycle = (project: string, ...extra: string[]) =>
  runPipeline("task-lifecycle", project, ...extra);

const runPipeline = (pipeline: string, project: string, ...extra: string[]) =>
  runCli(
    "run",
    pipeline,
    "--task",
    TASK,
    "--root",
    project,
    "--store",
    storeOf(project),
    "--mode",
    "yolo",
    "--headless",
    "--json",
    ...extra,
  );

const phasesOf = async (project: string, runId: string) => {
  const audit = await runCli("audit", runId, "--store", storeOf(project), "--json");
  return (JSON.parse(audit.stdout) as { type: string; payload: { from: string; to: string } }[])
    .filter((e) => e.type === "SMTransition")
    .map((e) => `${e.payload.from}->${e.payload.to}`);
};

describe("stagechart run task-lifecycle", () => {
  it("its script goes straight to done, npm test passing, state.json saying done", async () => {
    const project = taskProject();
    const ran = await runLifecycle(project);
    expect(ran.code, ran.stderr).toBe(0);
    const summary = summaryOf(ran.stdout);
    expect(summary.status).toBe("done");
    expect(await phasesOf(project, summary.runId)).toEqual([
      "planning->plan-review",
      "plan-review->codegen",
      "codegen->review",
      "review->test",
      "test->accept",
      "accept->done",
    ]);
    const state = JSON.parse(readFileSync(join(project, "task/state.json"), "utf8"));
    expect(state.phase).toBe("done");
    expect(state.actors.test).toEqual({ round: 1, status: "completed" });
    expect(state.actors.revert).toEqual({ round: 0, status: null });
    expect(readFileSync(join(project, "src/slug.js"), "utf8")).toContain("toLowerCase");
  });

  it("its test-failure script goes back to codegen once, then on to done", async () => {
    const project = taskProject();
    const ran = await runLifecycle(
      project,
      "--model",
      `scripted:${join(REPO_ROOT, "machines/task-lifecycle.test-failure.script.yaml")}`,
    );
    expect(ran.code, ran.stderr).toBe(0);
    const summary = summaryOf(ran.stdout);
    expect(await phasesOf(project, summary.runId)).toEqual([
      "planning->plan-review",
      "plan-review->codegen",
      "codegen->review",
      "review->test",
      "test->codegen",
      "codegen->review",
      "review->test",
      "test->accept",
      "accept->done",
    ]);
    const state = JSON.parse(readFileSync(join(project, "task/state.json"), "utf8"));
    expect(state.actors.codegen).toEqual({ round: 2, status: "completed" });
    expect(state.actors.test).toEqual({ round: 2, status: "completed" });
  });

  it("under ask with nobody to approve, the test command is denied and the run fails saying so", async () => {
    const project = taskProject();
    const ran = await runCli(
      ...["run", "task-lifecycle", "--task", TASK, "--root", project],
      ...["--store", storeOf(project), "--headless", "--json"],
    );
    expect(ran.code).toBe(1);
    expect(summaryOf(ran.stdout).error.message).toContain("`npm test` could not run");
    const state = JSON.parse(readFileSync(join(project, "task/state.json"), "utf8"));
    expect(state).toMatchObject({ phase: "test", actors: { test: { status: "failed" } } });
    expect(existsSync(join(project, "task/accept"))).toBe(false);
  });
});

const stateOf = (project: string) =>
  JSON.parse(readFileSync(join(project, "task/state.json"), "utf8"));

const decisionOf = (project: string) =>
  JSON.parse(readFileSync(join(project, "task/accept/decision.json"), "utf8"));

describe("the accept decision, asked of a person", () => {
  it("is answered by the script's answers in a run nobody watches, and recorded in decision.json", async () => {
    const project = taskProject();
    const ran = await runLifecycle(project);
    const { runId } = summaryOf(ran.stdout);
    expect(decisionOf(project)).toEqual({
      decision: "accepted",
      reason: "the tests pass and the change matches the plan",
    });
    const audit = await runCli("audit", runId, "--store", storeOf(project), "--json");
    const answered = (JSON.parse(audit.stdout) as { type: string; payload: unknown }[]).filter(
      (e) => e.type === "InputAnswered",
    );
    expect(answered).toEqual([
      expect.objectContaining({
        payload: {
          value: { decision: "accepted", reason: "the tests pass and the change matches the plan" },
          by: "script task-lifecycle.script.yaml",
        },
      }),
    ]);
  });

  it("without a scripted answer, suspends at accept until resume --input gives a valid one", async () => {
    const project = taskProject();
    const script = join(project, "no-answers.script.yaml");
    const straight = readFileSync(join(REPO_ROOT, "machines/task-lifecycle.script.yaml"), "utf8");
    writeFileSync(script, straight.slice(0, straight.indexOf("\nanswers:")));
    const ran = await runLifecycle(project, "--model", `scripted:${script}`, "--run-id", "t-ask");
    expect(ran.code, ran.stderr).toBe(3);
    expect(summaryOf(ran.stdout)).toMatchObject({
      status: "suspended",
      waiting: [{ kind: "input", stageId: "accept" }],
    });
    expect(stateOf(project)).toMatchObject({ phase: "accept" });
    expect(existsSync(join(project, "task/accept/decision.json"))).toBe(false);

    const resume = (input: string) =>
      storeCommand(project, "resume", "t-ask", "--input", input, "--headless", "--json");
    const refused = await resume('{"decision":"ship-it"}');
    expect(refused.code).toBe(1);
    expect(summaryOf(refused.stdout).error.code).toBe("Validation/InputInvalid");

    const accepted = await resume('{"decision":"accepted","reason":"looks right"}');
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(summaryOf(accepted.stdout)).toMatchObject({ runId: "t-ask", status: "done" });
    expect(decisionOf(project)).toEqual({ decision: "accepted", reason: "looks right" });
    expect((await phasesOf(project, "t-ask")).slice(-1)).toEqual(["accept->done"]);
  });
});

describe("stagechart redo of a task that ended done (done is final until redo)", () => {
  it("reopens it at the named phase with its run id, the reason audited, on to done again", async () => {
    const project = taskProject();
    const ran = await runLifecycle(project);
    const { runId, status } = summaryOf(ran.stdout);
    expect(status).toBe("done");
    const before = await phasesOf(project, runId);

    const noReason = await storeCommand(project, "redo", runId, "accept", "--json");
    expect(noReason.code).toBe(1);
    expect(summaryOf(noReason.stdout)).toMatchObject({
      status: "done",
      error: { code: "Validation/ReopenReasonMissing" },
    });
    // An override of an ended run stays refused: only a redo reopens it.
    const override = await storeCommand(
      project,
      "override",
      runId,
      "--to",
      "codegen",
      "--reason",
      "r",
      "--json",
    );
    expect(summaryOf(override.stdout).error.code).toBe("Session/RunFinished");

    const reason = "a regression was found after acceptance";
    const redo = await storeCommand(project, "redo", runId, "accept", "--reason", reason, "--json");
    expect(redo.code, redo.stderr).toBe(0);
    expect(summaryOf(redo.stdout)).toMatchObject({ runId, status: "done" });
    expect(await phasesOf(project, runId)).toEqual([...before, "accept->revert", "revert->done"]);
    const audit = await runCli("audit", runId, "--store", storeOf(project), "--json");
    const reopened = (JSON.parse(audit.stdout) as { type: string; payload: unknown }[]).filter(
      (e) => e.type === "RunReopened",
    );
    expect(reopened).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({
          stage: "accept",
          from: "accept",
          by: "command line",
          reason,
        }),
      }),
    ]);
    expect(stateOf(project)).toMatchObject({
      phase: "done",
      actors: {
        accept: { round: 2, status: "completed" },
        revert: { round: 1, status: "completed" },
        test: { round: 1, status: "completed" },
      },
    });
    expect(readFileSync(join(project, "src/slug.js"), "utf8")).toContain("not written yet");
    const shown = await runCli("show", runId, "--store", storeOf(project), "--json");
    expect(JSON.parse(shown.stdout).status).toBe("done");
  });

  it("without a phase, runs the one it ended from again", async () => {
    const project = taskProject();
    const ran = await runLifecycle(project);
    const { runId } = summaryOf(ran.stdout);
    const redo = await storeCommand(project, "redo", runId, "--reason", "recheck", "--json");
    expect(redo.code, redo.stderr).toBe(0);
    expect((await phasesOf(project, runId)).slice(-2)).toEqual(["accept->revert", "revert->done"]);
  });
});

/**
 * What task/state.json must say after each transition, worked out from the audit's transitions
 * alone: the phase entered, rounds counted per phase, the running one and those that completed.
 */
function expectedStates(transitions: string[]) {
  const rounds: Record<string, number> = { planning: 1 };
  const states = [{ phase: "planning", rounds: { ...rounds } }];
  for (const step of transitions) {
    const to = step.split("->")[1] as string;
    if (to !== "done") rounds[to] = (rounds[to] ?? 0) + 1;
    states.push({ phase: to, rounds: { ...rounds } });
  }
  return states.map(({ phase, rounds }) => ({
    phase,
    actors: Object.fromEntries(
      PHASES.map((id) => [
        id,
        {
          round: rounds[id] ?? 0,
          status: id === phase ? "running" : rounds[id] ? "completed" : null,
        },
      ]),
    ),
  }));
}

/**
 * A copy of the bundled task lifecycle whose onTransition also appends what `task/state.json`
 * says, once written, to `states.jsonl` in the root.
 */
function pipelineKeepingStates(): string {
  const dir = mkdtempSync(join(tmpdir(), "stagechart-lifecycle-"));
  cpSync(join(REPO_ROOT, "machines/task-lifecycle"), join(dir, "machines/task-lifecycle"), {
    recursive: true,
  });
  cpSync(join(REPO_ROOT, "stages/task-lifecycle"), join(dir, "stages/task-lifecycle"), {
    recursive: true,
  });
  writeFileSync(
    join(dir, "machines/task-lifecycle/keep-states.js"),
    `import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { recordTransition } from "./phases.js";
export const recordAndKeep = (notice) => {
  recordTransition(notice);
  const state = JSON.parse(readFileSync(join(notice.root, "task/state.json"), "utf8"));
  appendFileSync(join(notice.root, "states.jsonl"), \`\${JSON.stringify(state)}\\n\`);
};
`,
  );
  const yaml = readFileSync(join(REPO_ROOT, "machines/task-lifecycle.yaml"), "utf8").replace(
    "onTransition: ./task-lifecycle/phases.js#recordTransition",
    "onTransition: ./task-lifecycle/keep-states.js#recordAndKeep",
  );
  const file = join(dir, "machines/task-lifecycle.yaml");
  writeFileSync(file, yaml);
  return file;
}

describe("task/state.json through a run", () => {
  it("is right after every transition, the loop back to codegen included", async () => {
    const project = taskProject();
    const ran = await runPipeline(
      pipelineKeepingStates(),
      project,
      "--model",
      `scripted:${join(REPO_ROOT, "machines/task-lifecycle.test-failure.script.yaml")}`,
    );
    expect(ran.code, ran.stderr).toBe(0);
    const transitions = await phasesOf(project, summaryOf(ran.stdout).runId);
    expect(transitions).toContain("test->codegen");
    const written = readFileSync(join(project, "states.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(written).toEqual(expectedStates(transitions));
  });
});
