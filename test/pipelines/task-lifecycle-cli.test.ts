import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, runCli, storeOf, summaryOf } from "../support/cli.js";
import { taskProject } from "../support/task-lifecycle.js";

const TASK = "add slugify to src/slug.js";

const runLifecycle = (project: string, ...extra: string[]) =>
  runCli(
    "run",
    "task-lifecycle",
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
