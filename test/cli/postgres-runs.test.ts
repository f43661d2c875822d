import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import type { AuditEvent } from "../../src/events/audit.js";
import type { RunHandle } from "../../src/runtime/run.js";
import { startRun } from "../../src/runtime/run.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { liveActor } from "../runtime/support/live-actor.js";
import { demoProject, runCli, summaryOf } from "../support/cli.js";
import { slowPipeline } from "../support/live-runs.js";
import { noPostgres, testPostgres } from "../support/postgres.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

const skip = noPostgres;
const postgres = testPostgres();

const shown = (run: { stdout: string; stderr: string }) => `${run.stdout}\n${run.stderr}`;

async function openShared(url: string): Promise<PostgresStore> {
  const opened = await PostgresStore.open(url);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

async function auditOf(url: string, runId: string): Promise<AuditEvent[]> {
  const audit = await runCli("audit", runId, "--store", url, "--json");
  expect(audit.code).toBe(0);
  return JSON.parse(audit.stdout);
}

/** Every audit log gapless, each stage execution exited once. */
function expectWholeTrail(events: AuditEvent[]): void {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  const exits = events.filter((e) => e.type === "StageExited").map((e) => e.stageExecutionId);
  expect(new Set(exits).size).toBe(exits.length);
}

/**
 * The slow pipeline started on the shared store through its own connection and lease owner, as
 * another process would run it, in its waiting draft stage.
 */
async function liveSharedRun(url: string, runId: string) {
  const store = await openShared(url);
  const started = await startRun(slowPipeline(), {
    host: harness("stages: {}").host,
    store,
    runId,
  });
  if (!started.ok) throw started.error;
  const handle: RunHandle = started.value;
  await waitFor(liveActor(handle), (s) => s.context.current === "draft");
  return { handle, close: () => store.close() };
}

/** A reopenable one-stage pipeline whose scripted model submits "first", then "again". */
function reopenableProject(): string {
  const dir = tempDir();
  mkdirSync(join(dir, "stages"));
  writeFileSync(
    join(dir, "stages/plan.md"),
    `---
id: plan
name: plan
allowedTools: [Read]
completionTool: submit_work
completionSchema:
  type: object
  required: [summary]
  properties: { summary: { type: string } }
retryPolicy: { maxAttempts: 1, backoff: fixed, delayMs: 0 }
turnCap: 3
resolutionPolicy: fail
---
Plan {{ctx.task}}.
`,
  );
  writeFileSync(
    join(dir, "reopen.yaml"),
    "id: reopen\nreopenable: true\ncontext: { type: object, properties: { task: { type: string } } }\nentry: plan\nstages:\n  plan: { file: stages/plan.md }\n",
  );
  writeFileSync(
    join(dir, "reopen.script.yaml"),
    "stages:\n  plan:\n    - { tool: submit_work, args: { summary: first } }\n    - { tool: submit_work, args: { summary: again } }\n",
  );
  return join(dir, "reopen.yaml");
}

describe.skipIf(skip)("runs started and continued here on a PostgreSQL store", () => {
  it("runs code-review to done in this process; runs, show and audit then read it", async () => {
    const url = await postgres().createDatabase();
    const project = demoProject();
    const run = await runCli(
      ...["run", "code-review", "--task", "Add auth", "--json"],
      ...["--root", project, "--store", url],
    );
    expect(run.code).toBe(0);
    const { runId, status } = summaryOf(run.stdout);
    expect(status).toBe("done");
    expect(shown(run)).not.toContain(postgres().password);

    const listed = await runCli("runs", "--store", url);
    expect(listed.stdout).toMatch(new RegExp(`${runId}\\s+done\\s+code-review`));
    const shownRun = await runCli("show", runId, "--store", url, "--json");
    expect(JSON.parse(shownRun.stdout)).toMatchObject({ runId, status: "done" });
    const events = await auditOf(url, runId);
    expectWholeTrail(events);
    expect(events.at(-1)?.type).toBe("RunCompleted");
  });

  it("parks a run on a grant request, and resume --approve on the shared store finishes it", async () => {
    const url = await postgres().createDatabase();
    const project = demoProject();
    const run = await runCli(
      ...["run", "code-review", "--task", "Add auth", "--headless", "--on-grant", "suspend"],
      ...["--json", "--root", project, "--store", url],
    );
    expect(run.code).toBe(3);
    const summary = summaryOf(run.stdout);
    expect(summary).toMatchObject({ status: "suspended", waiting: [{ kind: "grant" }] });
    const { runId } = summary;
    const proposalId = summary.waiting[0].proposalId as string;

    const resumed = await runCli(
      "resume",
      runId,
      "--approve",
      proposalId,
      "--store",
      url,
      "--json",
    );
    expect(resumed.code).toBe(0);
    expect(summaryOf(resumed.stdout).status).toBe("done");
    const events = await auditOf(url, runId);
    expectWholeTrail(events);
    const types = events.map((e) => e.type);
    expect(types.indexOf("RunSuspended")).toBeLessThan(types.indexOf("RunResumed"));
    expect(events.find((e) => e.type === "GrantIssued")?.payload).toMatchObject({ proposalId });
  });

  it("cancels a suspended run nobody owns by resuming it with the cancel", async () => {
    const url = await postgres().createDatabase();
    const run = await runCli(
      ...["run", "code-review", "--task", "Add auth", "--headless", "--on-grant", "suspend"],
      ...["--json", "--root", demoProject(), "--store", url],
    );
    const { runId } = summaryOf(run.stdout);
    const cancelled = await runCli("cancel", runId, "--store", url, "--json");
    expect(cancelled.code).toBe(3);
    expect(summaryOf(cancelled.stdout)).toMatchObject({ runId, status: "cancelled" });
    expect((await auditOf(url, runId)).at(-1)?.type).toBe("RunCancelled");
  });

  it("cancels a run another owner runs live: the owner takes the request and the run ends cancelled", async () => {
    const url = await postgres().createDatabase();
    const live = await liveSharedRun(url, "run-live-1");
    try {
      const cancelled = await runCli("cancel", "run-live-1", "--store", url, "--json");
      expect(cancelled.code).toBe(0);
      expect(JSON.parse(cancelled.stdout)).toMatchObject({
        runId: "run-live-1",
        control: "CANCEL",
        outcome: "applied",
      });
      expect((await live.handle.result).status).toBe("cancelled");
    } finally {
      await live.close();
    }
    const types = (await auditOf(url, "run-live-1")).map((e) => e.type);
    expect(types).toContain("ControlRequested");
    expect(types.at(-1)).toBe("RunCancelled");
  });

  it("overrides a live run to a reachable stage through its owner, audited with the reason", async () => {
    const url = await postgres().createDatabase();
    const live = await liveSharedRun(url, "run-live-2");
    try {
      const moved = await runCli(
        ...["override", "run-live-2", "--to", "publish", "--reason", "draft is fine"],
        ...["--store", url, "--json"],
      );
      expect(moved.code).toBe(0);
      expect(JSON.parse(moved.stdout)).toMatchObject({ control: "OVERRIDE", outcome: "applied" });
      expect((await live.handle.result).status).toBe("done");
    } finally {
      await live.close();
    }
    const events = await auditOf(url, "run-live-2");
    expectWholeTrail(events);
    expect(events.find((e) => e.type === "ControlRequested")?.payload).toMatchObject({
      control: { type: "OVERRIDE", to: "publish", reason: "draft is fine" },
    });
  });

  it("reopens a run that ended done with redo, on the shared store", async () => {
    const url = await postgres().createDatabase();
    const pipeline = reopenableProject();
    const run = await runCli("run", pipeline, "--task", "t", "--store", url, "--json");
    expect(summaryOf(run.stdout)).toMatchObject({ status: "done", output: { summary: "first" } });
    const { runId } = summaryOf(run.stdout);
    const redo = await runCli("redo", runId, "--reason", "once more", "--store", url, "--json");
    expect(redo.code).toBe(0);
    expect(summaryOf(redo.stdout)).toMatchObject({ status: "done", output: { summary: "again" } });
    const events = await auditOf(url, runId);
    expectWholeTrail(events);
    expect(events.find((e) => e.type === "RunReopened")?.payload).toMatchObject({
      reason: "once more",
    });
  });
});
