import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import { parseScript } from "../../src/models/script-file.js";
import { createScriptedModel } from "../../src/models/scripted.js";
import type { ModelHandle } from "../../src/models/types.js";
import { forkRun } from "../../src/runtime/fork.js";
import { type HistoryStep, runHistory } from "../../src/runtime/history.js";
import { type RunResult, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { CODE_REVIEW_SCRIPT, llm, pipelineOf } from "../support/pipelines.js";
import { modelHarness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

const codeReview = (): PipelineDefinition =>
  pipelineOf({
    id: "code-review",
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });

interface ModelCall {
  /** `<stageExecutionId>#<position>` */
  key: string;
  /** How many messages the model was sent. */
  messages: number;
}

/** The scripted model, telling `calls` of every request it gets. */
function countingModel(calls: ModelCall[]): ModelHandle {
  const parsed = parseScript(CODE_REVIEW_SCRIPT, "test.script.yaml");
  if (!parsed.ok) throw new Error("the script does not parse");
  const handle = createScriptedModel(parsed.value);
  const model = handle.model;
  return {
    ...handle,
    model: {
      ...model,
      doGenerate: (options) => {
        const call = options.providerOptions?.stagechart as
          | { stageExecutionId: string; position: number }
          | undefined;
        calls.push({
          key: `${call?.stageExecutionId}#${call?.position}`,
          messages: options.prompt.length,
        });
        return model.doGenerate(options);
      },
    },
  };
}

function openStore(file: string): SqliteStore {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

async function finished(started: ReturnType<typeof startRun>): Promise<RunResult> {
  if (!started.ok) throw started.error;
  return started.value.result;
}

/** A finished durable run of code-review (r1), and the model calls it made. */
async function finishedRun() {
  const store = openStore(join(tempDir(), "runs.db"));
  const calls: ModelCall[] = [];
  const { host } = modelHarness(countingModel(calls));
  const result = await finished(
    startRun(codeReview(), { host, store, runId: "r1", task: "refactor auth module" }),
  );
  expect(result.status).toBe("done");
  return { store, calls, result };
}

const historyOf = (store: SqliteStore, runId: string): HistoryStep[] => {
  const history = runHistory(store, runId);
  if (!history.ok) throw history.error;
  return history.value;
};

describe("a run's history", () => {
  it("lists every committed step: its events, where it left the run, its transitions and status", async () => {
    const { store } = await finishedRun();
    const steps = historyOf(store, "r1");
    expect(steps.map((s) => s.step)).toEqual(steps.map((_, i) => i + 1));
    // The seq ranges of the steps cover the audit log, in order, without gaps.
    const covered = steps.flatMap((s) =>
      s.seq
        ? Array.from({ length: s.seq.to - s.seq.from + 1 }, (_, i) => (s.seq?.from ?? 0) + i)
        : [],
    );
    expect(covered).toEqual(store.auditOf("r1").map((e) => e.seq));
    expect(steps.flatMap((s) => s.transitions)).toEqual([
      "plan → execute (sequential)",
      "execute → review (sequential)",
      "review → done (terminal)",
    ]);
    expect(steps.find((s) => s.transitions.includes("plan → execute (sequential)"))?.state).toBe(
      "execute",
    );
    expect(steps.at(-1)).toMatchObject({ state: "done", status: "done" });
    expect(steps.slice(0, -1).every((s) => s.status === "running")).toBe(true);
  });

  it("of a run that is not there is Session/RunNotFound", () => {
    const store = openStore(join(tempDir(), "runs.db"));
    const history = runHistory(store, "nope");
    expect(history.ok ? undefined : history.error.code).toBe("Session/RunNotFound");
  });
});

describe("forking a run at a step", () => {
  it("starts a new run from that step, which finishes from there; the source is untouched", async () => {
    const { store, calls: original } = await finishedRun();
    const sourceAudit = store.auditOf("r1");
    const sourceSteps = historyOf(store, "r1");
    const at = sourceSteps.find((s) => s.transitions.includes("plan → execute (sequential)"));
    if (!at) throw new Error("no step enters execute");

    const calls: ModelCall[] = [];
    const forked = forkRun(codeReview(), "r1", {
      host: modelHarness(countingModel(calls)).host,
      store,
      at: at.step,
      runId: "f1",
    });
    if (!forked.ok) throw forked.error;
    const result = await forked.value.result;
    expect(result.status).toBe("done");
    expect(result.results.plan?.stageExecutionId).toBe("f1/plan/1");

    // plan ran in the source only; the fork asked the model for execute and review, as the source did.
    const asked = (list: ModelCall[], run: string) =>
      list.map((c) => c.key.replace(`${run}/`, "")).filter((k) => !k.startsWith("plan/"));
    expect(calls.some((c) => c.key.startsWith("f1/plan/"))).toBe(false);
    expect(asked(calls, "f1")).toEqual(asked(original, "r1"));

    const audit = store.auditOf("f1");
    expect(audit[0]).toMatchObject({
      seq: 1,
      type: "RunForked",
      payload: { from: { runId: "r1", step: at.step } },
    });
    expect(audit[1]?.type).toBe("RunResumed");
    expect(audit.some((e) => e.stageId === "plan")).toBe(false);
    expect(audit.filter((e) => e.type === "StageExited").map((e) => e.stageId)).toEqual([
      "execute",
      "review",
    ]);
    expect(store.auditOf("r1")).toEqual(sourceAudit);
    expect(historyOf(store, "r1")).toEqual(sourceSteps);
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "done" } });
  });

  it("in the middle of a stage, reuses its recorded model replies and continues its conversation", async () => {
    const { store, calls: original } = await finishedRun();
    // The step that recorded execute's first model turn: execute is still running after it.
    const turns = store
      .auditOf("r1")
      .filter((e) => e.type === "ModelTurn" && e.stageId === "execute");
    const firstTurn = turns[0]?.seq ?? 0;
    const at = historyOf(store, "r1").find((s) => s.seq && s.seq.to >= firstTurn);
    if (at?.state !== "execute") throw new Error("no step inside execute");

    const calls: ModelCall[] = [];
    const forked = forkRun(codeReview(), "r1", {
      host: modelHarness(countingModel(calls)).host,
      store,
      at: at.step,
      runId: "f2",
    });
    if (!forked.ok) throw forked.error;
    expect((await forked.value.result).status).toBe("done");
    const executeCalls = (list: ModelCall[], run: string) =>
      list.filter((c) => c.key.startsWith(`${run}/execute/`));
    const before = executeCalls(original, "r1");
    const after = executeCalls(calls, "f2");
    // The first reply was recorded before the step: not asked again. The next one was asked with
    // the whole conversation so far, as in the source run.
    expect(after.map((c) => c.key)).toEqual(
      before.slice(1).map((c) => c.key.replace("r1/", "f2/")),
    );
    expect(after.map((c) => c.messages)).toEqual(before.slice(1).map((c) => c.messages));
    expect(after[0]?.messages).toBeGreaterThan(2);
  });

  it("after a tool call, reads the tool's result (stored once, in the journal) back into the fork's conversation", async () => {
    const { store } = await finishedRun();
    const turns = store
      .auditOf("r1")
      .filter((e) => e.type === "ModelTurn" && e.stageId === "execute");
    // The step of execute's second model turn: its Edit call has run and been answered by then.
    const at = historyOf(store, "r1").find((s) => s.seq && s.seq.to >= (turns[1]?.seq ?? 0));
    if (at?.state !== "execute") throw new Error("no step inside execute after its tool call");
    const forked = forkRun(codeReview(), "r1", {
      host: modelHarness(countingModel([])).host,
      store,
      at: at.step,
      runId: "f3",
    });
    if (!forked.ok) throw forked.error;
    expect((await forked.value.result).status).toBe("done");
    const edit = (run: string) =>
      store.read(`${run}/execute/1`).find((e) => e.role === "tool" && e.tool === "Edit");
    expect(edit("r1")).toMatchObject({ role: "tool", isError: false });
    expect(edit("f3")).toEqual(edit("r1"));
  });

  it("changes ctx with set, audited, and refuses a ctx the pipeline's schema rejects", async () => {
    const { store } = await finishedRun();
    const refused = forkRun(codeReview(), "r1", {
      host: modelHarness(countingModel([])).host,
      store,
      at: 2,
      runId: "bad",
      set: { task: 5 },
    });
    expect(refused.ok ? undefined : refused.error.code).toBe("Validation/RunContextInvalid");
    expect(store.getRun("bad").ok).toBe(false);

    const forked = forkRun(codeReview(), "r1", {
      host: modelHarness(countingModel([])).host,
      store,
      at: 2,
      runId: "f3",
      set: { task: "rename auth" },
    });
    if (!forked.ok) throw forked.error;
    expect((await forked.value.result).status).toBe("done");
    expect(store.auditOf("f3")[0]?.payload).toMatchObject({ set: { task: "rename auth" } });
    expect(store.getRun("f3")).toMatchObject({
      ok: true,
      value: { options: { ctx: { task: "rename auth" } } },
    });
    const snapshot = store.getSnapshot("f3");
    expect(snapshot.ok && snapshot.value.snapshot).toMatchObject({
      context: { runId: "f3", ctx: { task: "rename auth" } },
    });
  });

  it("stores resumeWith in place of the source's settings, keeping the source's definition", async () => {
    const store = openStore(join(tempDir(), "runs.db"));
    const { host } = modelHarness(countingModel([]));
    const source = { model: "scripted:/beside.script.yaml", defaultModel: true, root: "/r" };
    const run = startRun(codeReview(), { host, store, runId: "r1", task: "t", resumeWith: source });
    await finished(run);
    const forked = forkRun(codeReview(), "r1", {
      host,
      store,
      at: 1,
      runId: "f1",
      resumeWith: { model: "scripted:/other.script.yaml", root: "/r" },
    });
    if (!forked.ok) throw forked.error;
    await forked.value.result;
    const [before, after] = ["r1", "f1"].map((runId) => store.getRun(runId));
    if (!before?.ok || !after?.ok) throw new Error("a run is missing");
    expect(after.value.options).toEqual({
      model: "scripted:/other.script.yaml",
      root: "/r",
      ctx: { task: "t" },
      definition: before.value.options.definition,
    });
  });

  it("refuses a step the run does not have, and a run id that is taken", async () => {
    const { store } = await finishedRun();
    const options = { host: modelHarness(countingModel([])).host, store };
    const unknown = forkRun(codeReview(), "r1", { ...options, at: 999 });
    expect(unknown.ok ? undefined : unknown.error.code).toBe("Validation/ForkStepUnknown");
    const taken = forkRun(codeReview(), "r1", { ...options, at: 1, runId: "r1" });
    expect(taken.ok ? undefined : taken.error.code).toBe("Session/RunExists");
  });
});
