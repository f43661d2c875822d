import { describe, expect, it } from "vitest";
import type { HistoryStep } from "../../src/runtime/run-history.js";
import { demoProject, runPipelineIn, storeCommand, summaryOf } from "../support/cli.js";

type Event = { seq: number; type: string; stageId?: string; payload: Record<string, unknown> };

/** A finished code-review run `r1` on a fresh demo project. */
async function finishedRun() {
  const project = demoProject();
  const run = await runPipelineIn(
    project,
    "code-review",
    "refactor auth module",
    "--headless",
    "--run-id",
    "r1",
    "--json",
  );
  expect(run.code).toBe(0);
  return project;
}

const auditOf = async (project: string, runId: string): Promise<Event[]> =>
  JSON.parse((await storeCommand(project, "audit", runId, "--json")).stdout);

const historyOf = async (project: string, runId: string): Promise<HistoryStep[]> =>
  JSON.parse((await storeCommand(project, "history", runId, "--json")).stdout);

describe("stagechart history", () => {
  it("lists a run's steps, one JSON element per step, and one line per step", async () => {
    const project = await finishedRun();
    const steps = await historyOf(project, "r1");
    expect(steps.length).toBeGreaterThan(3);
    expect(steps[0]).toEqual({
      step: 1,
      seq: { from: 1, to: expect.any(Number) },
      at: expect.any(String),
      state: "plan",
      transitions: [],
      status: "running",
    });
    expect(steps.at(-1)).toMatchObject({ state: "done", status: "done" });
    expect(steps.at(-1)?.seq?.to).toBe((await auditOf(project, "r1")).length);

    const text = await storeCommand(project, "history", "r1");
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split("\n");
    expect(lines).toHaveLength(steps.length);
    expect(lines.find((l) => l.includes("plan → execute (sequential)"))).toMatch(
      /^\s+\d+ {2}seq \d+–\d+ +\S+ {2}execute {2}running {2}plan → execute \(sequential\)$/,
    );
  });

  it("of a run not in the store is Session/RunNotFound, exit 1", async () => {
    const project = await finishedRun();
    const missing = await storeCommand(project, "history", "nope", "--json");
    expect(missing.code).toBe(1);
    expect(summaryOf(missing.stdout)).toMatchObject({ error: { code: "Session/RunNotFound" } });
  });
});
