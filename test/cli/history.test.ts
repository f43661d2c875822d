import { copyFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { HistoryStep } from "../../src/runtime/history.js";
import { SqliteStore } from "../../src/store/index.js";
import { DECIDING } from "../support/ask-pipelines.js";
import {
  demoProject,
  REPO_ROOT,
  runCli,
  runPipelineIn,
  storeCommand,
  storeOf,
  summaryOf,
} from "../support/cli.js";
import { tempDir } from "../support/stages.js";

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

describe("stagechart fork", () => {
  it("starts a new run from a step that finishes from there, leaving the source as it was", async () => {
    const project = await finishedRun();
    const sourceAudit = await auditOf(project, "r1");
    const at = (await historyOf(project, "r1")).find((s) =>
      s.transitions.includes("execute → review (sequential)"),
    );
    if (!at) throw new Error("no step enters review");
    const fork = await storeCommand(
      project,
      "fork",
      "r1",
      "--at",
      String(at.step),
      "--run-id",
      "f1",
      "--set",
      "task=review it again",
      "--headless",
      "--json",
    );
    expect(fork.code).toBe(0);
    expect(summaryOf(fork.stdout)).toMatchObject({ runId: "f1", status: "done" });

    const audit = await auditOf(project, "f1");
    expect(audit[0]).toMatchObject({
      seq: 1,
      type: "RunForked",
      payload: { from: { runId: "r1", step: at.step }, set: { task: "review it again" } },
    });
    expect(audit.filter((e) => e.type === "StageExited").map((e) => e.stageId)).toEqual(["review"]);
    expect(await auditOf(project, "r1")).toEqual(sourceAudit);
    const runs = JSON.parse((await storeCommand(project, "runs", "--json")).stdout);
    expect(runs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ runId: "r1", status: "done" }),
        expect.objectContaining({ runId: "f1", status: "done" }),
      ]),
    );
  });

  it("refuses a step the run does not have (exit 1) and one that is no step (exit 2)", async () => {
    const project = await finishedRun();
    const unknown = await storeCommand(
      project,
      "fork",
      "r1",
      "--at",
      "999",
      "--headless",
      "--json",
    );
    expect(unknown.code).toBe(1);
    expect(summaryOf(unknown.stdout)).toMatchObject({
      error: { code: "Validation/ForkStepUnknown" },
    });
    const usage = await storeCommand(project, "fork", "r1", "--at", "zero");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('a step is a whole number from 1, got "zero"');
  });

  it("runs on --model when given, keeping the source run's other settings", async () => {
    const project = await finishedRun();
    const script = join(project, "other.script.yaml");
    copyFileSync(join(REPO_ROOT, "machines/code-review.script.yaml"), script);
    const fork = await storeCommand(
      project,
      "fork",
      "r1",
      "--at",
      "1",
      "--run-id",
      "f1",
      "--model",
      `scripted:${script}`,
      "--headless",
      "--json",
    );
    expect(fork.code).toBe(0);
    const store = SqliteStore.open(storeOf(project));
    if (!store.ok) throw store.error;
    try {
      const [source, forked] = ["r1", "f1"].map((runId) => store.value.getRun(runId));
      if (!source?.ok || !forked?.ok) throw new Error("a run is missing");
      const { model: _model, defaultModel, ...kept } = source.value.options;
      expect(defaultModel).toBe(true);
      expect(forked.value.options).toMatchObject({ ...kept, model: `scripted:${script}` });
      expect(forked.value.options).not.toHaveProperty("defaultModel");
    } finally {
      store.value.close();
    }
  });
});

describe("stagechart fork --model, then resume", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  /**
   * `deciding` (a person accepts or rejects) run on `sourceModel` (none: the script beside it)
   * until it waits at its ask, forked from there onto `forkModel`, waiting too: the fork's id.
   */
  async function forkedOnto(sourceModel: string | undefined, forkModel: (dir: string) => string) {
    const dir = tempDir();
    const pipeline = join(dir, "deciding.yaml");
    writeFileSync(pipeline, DECIDING);
    writeFileSync(join(dir, "deciding.script.yaml"), "stages: {}\n");
    writeFileSync(join(dir, "other.script.yaml"), "stages: {}\n");
    const store = join(dir, "runs.db");
    const model = sourceModel === undefined ? [] : ["--model", sourceModel];
    const common = ["--store", store, "--headless", "--json"];
    const run = await runCli("run", pipeline, ...model, "--root", dir, "--run-id", "d1", ...common);
    expect(summaryOf(run.stdout)).toMatchObject({ status: "suspended" });
    const steps = JSON.parse((await runCli("history", "d1", "--json", "--store", store)).stdout);
    const at = String((steps as HistoryStep[]).at(-1)?.step);
    const fork = await runCli(
      "fork",
      "d1",
      "--at",
      at,
      "--run-id",
      "d2",
      "--model",
      forkModel(dir),
      ...common,
    );
    expect(summaryOf(fork.stdout)).toMatchObject({ runId: "d2", status: "suspended" });
    const resume = () => runCli("resume", "d2", "--input", '{"decision":"accepted"}', ...common);
    return { dir, resume };
  }

  it("resumes a fork moved off the script beside the pipeline once that script is gone", async () => {
    const { dir, resume } = await forkedOnto(
      undefined,
      (dir) => `scripted:${join(dir, "other.script.yaml")}`,
    );
    rmSync(join(dir, "deciding.script.yaml"));
    const resumed = await resume();
    const { runId, status, error } = summaryOf(resumed.stdout);
    expect({ runId, status, error }).toEqual({ runId: "d2", status: "done", error: undefined });
    expect(resumed.code).toBe(0);
  });

  it("resumes without a key a fork moved off a model whose base URL carried one", async () => {
    vi.stubEnv("OPENAI_COMPATIBLE_API_KEY", "");
    const { resume } = await forkedOnto(
      "openai-compatible:http://sk-in-url@127.0.0.1:9/v1#local",
      () => "openai-compatible:http://127.0.0.1:9/v1#local",
    );
    const resumed = await resume();
    const { runId, status, error } = summaryOf(resumed.stdout);
    expect({ runId, status, error }).toEqual({ runId: "d2", status: "done", error: undefined });
    expect(resumed.code).toBe(0);
  });
});
