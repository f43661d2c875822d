import { describe, expect, it } from "vitest";
import { demoProject, runPipelineIn, storeCommand, summaryOf } from "../support/cli.js";

const linesOf = (stdout: string) =>
  stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe("run --stream-json", () => {
  it("prints every event as a line of JSON as it happens, the reply's pieces too, then the summary", async () => {
    const project = demoProject();
    const run = await runPipelineIn(
      project,
      "code-review",
      "rename auth",
      "--headless",
      "--stream-json",
    );
    expect(run.code, run.stderr).toBe(0);
    const lines = linesOf(run.stdout);
    const summary = lines.at(-1);
    expect(summary).toMatchObject({ status: "done" });
    const events = lines.slice(0, -1);
    expect(events[0]).toMatchObject({ type: "RunStarted" });
    const audited = events.filter((e) => e.type !== "ModelDelta");
    const deltas = events.filter((e) => e.type === "ModelDelta");
    expect(deltas.length).toBeGreaterThan(audited.filter((e) => e.type === "ModelTurn").length);
    expect(deltas[0]).toMatchObject({
      runId: summary?.runId,
      stageId: "plan",
      attempt: 1,
      turn: 1,
      kind: "tool-call",
      tool: "Edit",
    });
    // The audit events are the run's log, as `audit --json` gives it; nothing else is printed.
    const audit = await storeCommand(project, "audit", String(summary?.runId), "--json");
    expect(audited).toEqual(JSON.parse(audit.stdout));
    expect(run.stderr).toBe("");
  });

  it("keeps --json as it was: the summary alone on stdout", async () => {
    const project = demoProject();
    const run = await runPipelineIn(project, "code-review", "rename auth", "--headless", "--json");
    expect(run.stdout.trim().split("\n")).toHaveLength(1);
    expect(summaryOf(run.stdout)).toMatchObject({ status: "done" });
  });
});
