import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CANCEL_PENDING, LOOP_REFUSED } from "../../src/definitions/pi-workflows/index.js";
import type { AuditEvent } from "../../src/events/audit.js";
import { runCli, summaryOf } from "../support/cli.js";
import { live } from "../support/crash-runs.js";
import { releaseRoot, releaseSuspendedOnGrant } from "../support/pi-workflows.js";
import { tempDir } from "../support/stages.js";

/** Runs `release` of a fresh copy of machines/pi-release with one of its scripts (or `script`). */
async function runRelease(script: string, ...flags: string[]) {
  const root = releaseRoot();
  const project = tempDir();
  const store = join(project, "runs.db");
  const model = `scripted:${join(root, script)}`;
  const run = await runCli(
    "run",
    join(root, "release"),
    "--task",
    "Ship 1.2",
    "--model",
    model,
    "--root",
    project,
    "--store",
    store,
    "--json",
    ...flags,
  );
  const summary = summaryOf(run.stdout) as {
    runId: string;
    status: string;
    waiting?: { proposalId: string }[];
  };
  const audit = async (): Promise<AuditEvent[]> =>
    JSON.parse((await runCli("audit", summary.runId, "--json", "--store", store)).stdout);
  return { root, store, run, summary, audit };
}

const transitions = (events: AuditEvent[]) =>
  events.filter((e) => e.type === "SMTransition").map((e) => `${e.payload.from} → ${e.payload.to}`);

describe("stagechart run <pi-workflows directory>", () => {
  it("advances phase by phase, enters and leaves the subworkflow, and loops the loopable one to its first phase", async () => {
    const { run, summary, audit } = await runRelease("release.script.yaml");
    expect(run.code).toBe(0);
    expect(summary.status).toBe("done");
    expect(transitions(await audit())).toEqual([
      "build → code-review",
      "static-analysis → manual-review",
      "manual-review → static-analysis", // loop: code-review starts again
      "static-analysis → manual-review",
      "manual-review → done", // the subworkflow is over: back to release
      "code-review → publish",
      "publish → done",
    ]);
  });

  it("refuses a loop in a workflow with loopable: false, as a tool result the model reads, and goes on", async () => {
    const { run, summary, audit } = await runRelease("release.loop-refused.script.yaml");
    expect(run.code).toBe(0);
    expect(summary.status).toBe("done");
    const events = await audit();
    const refused = events.filter((e) => e.type === "CompletionRejected");
    expect(refused.map((e) => e.stageExecutionId)).toEqual([`${summary.runId}/build/1`]);
    expect(refused[0]?.payload).toMatchObject({ reason: "refused", message: LOOP_REFUSED });
    expect(transitions(events)[0]).toBe("build → code-review");
  });

  it("takes a cancel only when confirmed by a second one in the same stage execution, and cancels the whole run from a subworkflow", async () => {
    const { run, summary, audit } = await runRelease("release.cancel.script.yaml");
    expect(run.code).toBe(3);
    expect(summary.status).toBe("cancelled");
    const events = await audit();
    expect(
      events.filter((e) => e.type === "CompletionRejected").map((e) => e.payload.message),
    ).toEqual([CANCEL_PENDING]);
    expect(transitions(events)).toEqual([
      "build → code-review",
      "static-analysis → cancel",
      "code-review → cancel",
    ]);
    // The phase had ended: nothing was left running to cancel.
    expect(events.filter((e) => e.type === "StageCancelled")).toEqual([]);
    expect(events.at(-1)?.type).toBe("RunCancelled");
  });

  it("show prints where a stopped run is as the pi-workflows breadcrumb, and the run resumes from there", async () => {
    const root = releaseRoot();
    const project = tempDir();
    const store = join(project, "runs.db");
    const { runId, waiting } = await releaseSuspendedOnGrant(root, project, store);
    const shown = await runCli("show", runId, "--store", store);
    expect(shown.stdout).toContain(
      "workflow: Release Pipeline > Code Review [2/3] > 🔍 Static Analysis [1/2]\n",
    );
    const resumed = await runCli(
      "resume",
      runId,
      "--deny",
      waiting[0]?.proposalId as string,
      "--store",
      store,
      "--json",
    );
    expect(summaryOf(resumed.stdout)).toMatchObject({ status: "done" });
    expect((await runCli("show", runId, "--store", store)).stdout).not.toContain("workflow:");
  });

  it("validate reports a broken workflow directory as file:line:col code message, and exits 1", async () => {
    const root = releaseRoot();
    writeFileSync(
      join(root, "code-review/workflow.yaml"),
      "name: Code Review\nshow: workflows\nphases: [missing.md]\n",
    );
    const run = await runCli("validate", join(root, "release"));
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `${join(root, "code-review/missing.md")}:1:1 Validation/StageFileUnreadable cannot be read: no such file`,
    );
    expect(run.stdout).toContain(
      `${join(root, "release/workflow.yaml")}:9:5 Validation/WorkflowReferenceBroken workflow "release" is removed: it uses subworkflow "code-review", which did not load`,
    );
    expect((await runCli("validate", join(root, "code-review"))).code).toBe(1);
  });

  // Runs the built package: `npm run build` first.
  it("resumes a run killed inside the subworkflow where it stopped, each phase execution ending once", async () => {
    const root = releaseRoot();
    const slow = (action: string) =>
      `{ tool: workflow_step, args: { action: ${action} }, delayMs: 150 }`;
    writeFileSync(
      join(root, "release.slow.script.yaml"),
      `stages:
  build: [${slow("next")}]
  static-analysis: [${slow("next")}, ${slow("next")}]
  manual-review: [${slow("loop")}, ${slow("next")}]
  publish: [${slow("next")}]
`,
    );
    const project = tempDir();
    const store = join(project, "runs.db");
    const killed = await live(
      {
        cli: [
          "run",
          join(root, "release"),
          "--task",
          "Ship",
          "--run-id",
          "pi-1",
          "--json",
          "--model",
          `scripted:${join(root, "release.slow.script.yaml")}`,
          "--root",
          project,
          "--store",
          store,
        ],
      },
      { afterEvents: 12, delayMs: 50 },
    );
    expect(killed.code).toBeNull();
    const before = JSON.parse((await runCli("audit", "pi-1", "--json", "--store", store)).stdout);
    // Killed inside code-review: its first phase had started, publish had not.
    const setUp = before.filter((e: AuditEvent) => e.type === "StageSetup");
    expect(setUp.map((e: AuditEvent) => e.stageExecutionId)).toContain(
      "pi-1/code-review/1/static-analysis/1",
    );
    expect(setUp.map((e: AuditEvent) => e.stageExecutionId)).not.toContain("pi-1/publish/1");
    const resumed = await live({ cli: ["resume", "pi-1", "--json", "--store", store] });
    expect(resumed.code).toBe(0);
    expect(resumed.result?.status).toBe("done");
    const events: AuditEvent[] = JSON.parse(
      (await runCli("audit", "pi-1", "--json", "--store", store)).stdout,
    );
    const exits = events.filter((e) => e.type === "StageExited").map((e) => e.stageExecutionId);
    expect(exits).toEqual([
      "pi-1/build/1",
      "pi-1/code-review/1/static-analysis/1",
      "pi-1/code-review/1/manual-review/1",
      "pi-1/code-review/1/static-analysis/2",
      "pi-1/code-review/1/manual-review/2",
      "pi-1/publish/1",
    ]);
    expect(transitions(events)).toEqual([
      "build → code-review",
      "static-analysis → manual-review",
      "manual-review → static-analysis",
      "static-analysis → manual-review",
      "manual-review → done",
      "code-review → publish",
      "publish → done",
    ]);
  }, 60_000);
});
