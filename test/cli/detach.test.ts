import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { demoProject, runCli, runIn, storeCommand, storeOf, summaryOf } from "../support/cli.js";
import { DEMO_SERVER } from "../support/mcp.js";
import { project } from "../support/pipeline-files.js";
import { seedPlan } from "../support/stages.js";

/** The project's store, opened behind the CLI's back. */
function withStore<T>(project: string, read: (store: SqliteStore) => T): T {
  const opened = SqliteStore.open(storeOf(project));
  if (!opened.ok) throw opened.error;
  try {
    return read(opened.value);
  } finally {
    opened.value.close();
  }
}

describe("run --detach", () => {
  it("queues the run with its definition, prints its id and runs nothing", async () => {
    const project = demoProject();
    const before = readFileSync(join(project, "src/auth.ts"), "utf8");
    const detached = await runIn(project, "run", "code-review", "--task", "Add auth", "--detach");
    expect(detached.code).toBe(0);
    const runId = detached.stdout.trim();
    expect(runId).toMatch(/^run-[0-9a-f]{8}$/);

    const run = withStore(project, (store) => ({
      record: store.getRun(runId),
      audit: store.auditOf(runId),
    }));
    if (!run.record.ok) throw run.record.error;
    expect(run.record.value).toMatchObject({ status: "queued", pipelineId: "code-review" });
    expect(run.record.value.options).toMatchObject({ ctx: { task: "Add auth" } });
    expect(run.audit).toEqual([]);
    expect(readFileSync(join(project, "src/auth.ts"), "utf8")).toBe(before);
    const bundle = withStore(project, (store) =>
      store.loadDefinition(run.record.ok ? run.record.value.definitionHash : ""),
    );
    expect(bundle.ok && bundle.value.entry).toBe("machines/code-review.yaml");

    const listed = await storeCommand(project, "runs");
    expect(listed.stdout).toMatch(new RegExp(`${runId}\\s+queued\\s+code-review`));
    expect((await storeCommand(project, "runs", "--status", "queued")).stdout).toContain(runId);
    const shown = await storeCommand(project, "show", runId);
    expect(shown.stdout).toContain(`run ${runId} · code-review · queued`);
  });

  it("prints a JSON summary with --json, and takes the run id given", async () => {
    const project = demoProject();
    const detached = await runIn(
      project,
      ...["run", "code-review-parallel", "--task", "Add auth", "--detach", "--json"],
      ...["--run-id", "queued-1"],
    );
    expect(detached.code).toBe(0);
    expect(summaryOf(detached.stdout)).toMatchObject({ runId: "queued-1", status: "queued" });
  });

  it("cancel cancels a queued run in place: it never begins", async () => {
    const project = demoProject();
    const detached = await runIn(project, "run", "code-review", "--task", "Add auth", "--detach");
    const runId = detached.stdout.trim();
    const cancelled = await storeCommand(project, "cancel", runId);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toContain(`run ${runId} cancelled before any worker took it`);
    const audit = await storeCommand(project, "audit", runId, "--json");
    expect(JSON.parse(audit.stdout)).toMatchObject([
      { type: "RunCancelled", payload: { neverBegan: true } },
    ]);
    expect((await storeCommand(project, "runs")).stdout).toMatch(
      new RegExp(`${runId}\\s+cancelled`),
    );
  });

  it("refuses what a run would refuse: a ctx the pipeline rejects, nothing queued", async () => {
    const project = demoProject();
    const detached = await runIn(project, "run", "code-review", "--detach");
    expect(detached.code).toBe(1);
    expect(detached.stderr).toContain("Validation/RunContextInvalid");
    expect((await storeCommand(project, "runs")).stdout).not.toContain("queued");
  });

  it("checks allowedTools against the tools of the MCP servers it is given", async () => {
    const dir = project({
      "stages/plan.md": seedPlan.replace(
        /^allowedTools: .*$/m,
        'allowedTools: ["Read", "mcp__demo__lookup"]',
      ),
      "machines/lookup.yaml":
        "id: lookup\ncontext: { type: object, properties: { task: { type: string } } }\nentry: plan\nstages:\n  plan: { file: ../stages/plan.md }\n",
    });
    const detach = (...argv: string[]) =>
      runCli(
        ...["run", join(dir, "machines/lookup.yaml"), "--task", "find auth", "--detach"],
        ...["--store", join(dir, "runs.db"), ...argv],
      );
    const without = await detach();
    expect(without.code).toBe(1);
    expect(without.stderr).toContain("Validation/UnknownTool");
    const demo = `demo=${JSON.stringify(process.execPath)} ${JSON.stringify(DEMO_SERVER)}`;
    const withServer = await detach("--mcp", demo);
    expect(withServer.stderr).not.toContain("Validation/");
    expect(withServer.code).toBe(0);
  });

  it("queues a pipeline that names code modules with those modules in its definition", async () => {
    const project = demoProject();
    const detached = await runIn(project, "run", "task-lifecycle", "--task", "x", "--detach");
    expect(detached.code).toBe(0);
    const runId = detached.stdout.trim();
    const files = withStore(project, (store) => {
      const run = store.getRun(runId);
      if (!run.ok) throw run.error;
      const bundle = store.loadDefinition(run.value.definitionHash);
      if (!bundle.ok) throw bundle.error;
      return Object.keys(bundle.value.files);
    });
    expect(files).toContainEqual(expect.stringMatching(/task-lifecycle\/phases\.js$/));
  });
});
