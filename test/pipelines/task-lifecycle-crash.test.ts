import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, storeOf, summaryOf } from "../support/cli.js";
import { pausingScript, runBuilt, taskProject } from "../support/task-lifecycle.js";

/**
 * task-lifecycle runs killed with SIGKILL mid-phase by the real CLI (`npm run build` first), then
 * continued from the store: each phase's artifacts and task/state.json end as an unbroken run's.
 */

const TASK = "add slugify to src/slug.js";
const STRAIGHT = [
  "planning->plan-review",
  "plan-review->codegen",
  "codegen->review",
  "review->test",
  "test->accept",
  "accept->done",
];

function runArgs(project: string, runId: string, script: string): string[] {
  return [
    ...["run", "task-lifecycle", "--task", TASK, "--root", project, "--run-id", runId],
    ...["--store", storeOf(project), "--mode", "yolo", "--headless", "--json"],
    ...["--model", `scripted:${script}`],
  ];
}

async function auditOf(project: string, runId: string) {
  const audit = await runCli("audit", runId, "--store", storeOf(project), "--json");
  return JSON.parse(audit.stdout) as {
    type: string;
    stageId?: string;
    payload: Record<string, unknown>;
  }[];
}

const transitionsOf = (events: Awaited<ReturnType<typeof auditOf>>) =>
  events.filter((e) => e.type === "SMTransition").map((e) => `${e.payload.from}->${e.payload.to}`);

/** A store command of the built CLI, the one that ran the run. */
const built = (project: string, ...argv: string[]) =>
  runBuilt([...argv, "--store", storeOf(project)]);

const stateOf = (project: string) =>
  JSON.parse(readFileSync(join(project, "task/state.json"), "utf8"));

const ARTIFACTS = [
  "planning/planning.ai.json",
  "planning/plan.md",
  "planning/plan.files.json",
  "review/plan-review.json",
  "code/diff.patch",
  "code/files/src/slug.js",
  "review/code-review.json",
  "accept/decision.json",
];

describe("a task-lifecycle run killed mid-phase", () => {
  it("resumes to done: every phase's artifacts there, each phase run once, state.json saying done", async () => {
    const project = taskProject();
    // Killed once codegen has written the diff, while its model takes its time over the files.
    const script = pausingScript(project, [{ stage: "codegen", entry: 2, delayMs: 5000 }]);
    const killed = await runBuilt(
      runArgs(project, "r-kill", script),
      /codegen .*Write\(task\/code\/diff\.patch.*\) ok/,
    );
    expect(killed.lines.some((l) => l.includes("diff.patch"))).toBe(true);
    const shown = await built(project, "show", "r-kill", "--json");
    expect(JSON.parse(shown.stdout).status).toBe("running");
    expect(stateOf(project)).toMatchObject({ phase: "codegen" });
    expect(existsSync(join(project, "task/code/files"))).toBe(false);

    const resumed = await built(project, "resume", "r-kill", "--json");
    expect(resumed.code, resumed.lines.join("\n")).toBe(0);
    expect(summaryOf(resumed.stdout)).toMatchObject({ runId: "r-kill", status: "done" });
    const events = await auditOf(project, "r-kill");
    expect(transitionsOf(events)).toEqual(STRAIGHT);
    // Codegen was not set up again: its execution went on where it was.
    expect(events.filter((e) => e.type === "StageSetup").map((e) => e.stageId)).toEqual([
      "planning",
      "plan-review",
      "codegen",
      "review",
      "test",
      "accept",
    ]);
    for (const file of ARTIFACTS) expect(existsSync(join(project, "task", file)), file).toBe(true);
    expect(readFileSync(join(project, "src/slug.js"), "utf8")).toContain("toLowerCase");
    const state = stateOf(project);
    expect(state.phase).toBe("done");
    for (const phase of ["planning", "plan-review", "codegen", "review", "test", "accept"])
      expect(state.actors[phase], phase).toEqual({ round: 1, status: "completed" });
    expect(state.actors.revert).toEqual({ round: 0, status: null });
  });

  it("is moved on by an override the lifecycle's table allows, its reason audited; one it does not is refused", async () => {
    const project = taskProject();
    const script = pausingScript(project, [{ stage: "review", entry: 1, delayMs: 5000 }]);
    await runBuilt(
      runArgs(project, "r-over", script),
      /review .*Write\(task\/review\/code-review\.json.*\) ok/,
    );
    expect(stateOf(project)).toMatchObject({ phase: "review" });
    // review → accept would skip test: refused, audited, and the run left as it was.
    const skip = await built(
      ...[project, "override", "r-over", "--to", "accept", "--reason", "ship it", "--json"],
    );
    expect(skip.code).toBe(1);
    expect(summaryOf(skip.stdout)).toMatchObject({
      status: "running",
      error: { code: "Session/IllegalTransition" },
    });
    const reason = "I accept the risk of skipping review";
    const over = await built(
      ...[project, "override", "r-over", "--to", "test", "--reason", reason, "--json"],
    );
    expect(over.code, over.lines.join("\n")).toBe(0);
    expect(summaryOf(over.stdout)).toMatchObject({ runId: "r-over", status: "done" });
    const events = await auditOf(project, "r-over");
    expect(events.filter((e) => e.type === "RequestRefused")).toEqual([
      expect.objectContaining({
        payload: expect.objectContaining({
          control: { type: "OVERRIDE", to: "accept", reason: "ship it" },
        }),
      }),
    ]);
    expect(events.filter((e) => e.type === "OverrideApplied").map((e) => e.payload)).toEqual([
      expect.objectContaining({ from: "review", to: "test", reason }),
    ]);
    expect(transitionsOf(events)).toEqual([
      ...STRAIGHT.slice(0, 3),
      "review->test",
      "test->accept",
      "accept->done",
    ]);
    expect(
      events.find((e) => e.type === "SMTransition" && e.payload.from === "review"),
    ).toMatchObject({
      payload: { kind: "override" },
    });
    expect(stateOf(project)).toMatchObject({
      phase: "done",
      actors: { review: { round: 1 }, test: { round: 1, status: "completed" } },
    });
  });
});
