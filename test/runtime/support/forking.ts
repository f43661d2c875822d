import { expect, it } from "vitest";
import type { PipelineDefinition } from "../../../src/definitions/pipeline-types.js";
import type { Result } from "../../../src/errors.js";
import { parseScript } from "../../../src/models/script-file.js";
import { createScriptedModel } from "../../../src/models/scripted.js";
import type { ModelHandle } from "../../../src/models/types.js";
import { createFork, endRefusedFork } from "../../../src/runtime/fork-run.js";
import type { Host } from "../../../src/runtime/host.js";
import type { GrantAnswer, RunHandle, RunResult } from "../../../src/runtime/run.js";
import { type HistoryStep, readHistory } from "../../../src/runtime/run-history.js";
import type { RunStore } from "../../../src/runtime/store-port.js";
import { CODE_REVIEW_SCRIPT, llm, pipelineOf } from "../../support/pipelines.js";
import { modelHarness } from "../../support/stage-harness.js";

/**
 * A fresh store of one kind, and how a run starts and resumes on it in this process (`startRun`
 * and `resumeRun`, the same on either store).
 */
export interface ForkingStore {
  store: RunStore;
  start(
    pipeline: PipelineDefinition,
    options: { host: Host; runId: string; task: string; resumeWith?: Record<string, unknown> },
  ): Promise<Result<RunHandle>>;
  resume(
    pipeline: PipelineDefinition,
    runId: string,
    options: { host: Host; answers?: readonly GrantAnswer[] },
  ): Promise<Result<RunHandle>>;
  /** Runs one statement on the store's database behind its back. */
  sql(text: string): Promise<void>;
}

export const codeReview = (): PipelineDefinition =>
  pipelineOf({
    id: "code-review",
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });

/** code-review with its review stage's prompt changed: another definition of the same pipeline. */
const codeReviewChanged = (): PipelineDefinition =>
  pipelineOf({
    id: "code-review",
    stages: [llm("plan"), llm("execute"), llm("review", (text) => `${text}\nLook twice.\n`)],
    next: { plan: "execute", execute: "review" },
  });

export interface ModelCall {
  /** `<stageExecutionId>#<position>` */
  key: string;
  /** How many messages the model was sent. */
  messages: number;
}

/** The scripted model, telling `calls` of every request it gets. */
export function countingModel(calls: ModelCall[]): ModelHandle {
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

const hostOf = (calls: ModelCall[] = []) => modelHarness(countingModel(calls)).host;

async function finished(launched: Promise<Result<RunHandle>>): Promise<RunResult> {
  const handle = await launched;
  if (!handle.ok) throw handle.error;
  return handle.value.result;
}

/** The run's history, read through the asynchronous contract as `stagechart history` does. */
export async function historyOf(store: RunStore, runId: string): Promise<HistoryStep[]> {
  const history = await readHistory(store, runId);
  if (!history.ok) throw history.error;
  return history.value;
}

/**
 * What forking a run at a step means, on any store: `createFork` stores the new run from the
 * step's snapshot and what the source had recorded by then, and the store's own resume launches it.
 */
export function forkingSpec(fresh: () => Promise<ForkingStore>): void {
  /** A finished durable run of code-review (r1) on a fresh store, and the model calls it made. */
  async function finishedRun() {
    const target = await fresh();
    const calls: ModelCall[] = [];
    const result = await finished(
      target.start(codeReview(), {
        host: hostOf(calls),
        runId: "r1",
        task: "refactor auth module",
      }),
    );
    expect(result.status).toBe("done");
    return { ...target, calls };
  }

  /** The fork of r1 at `at` as `runId`, resumed on its store to its end. */
  async function forkedToEnd(target: ForkingStore, at: number, runId: string, calls: ModelCall[]) {
    const created = await createFork(codeReview(), "r1", { store: target.store, at, runId });
    if (!created.ok) throw created.error;
    return finished(target.resume(codeReview(), runId, { host: hostOf(calls) }));
  }

  it("starts a new run from that step, which finishes from there; the source is untouched", async () => {
    const target = await finishedRun();
    const { store, calls: original } = target;
    const sourceAudit = await store.auditOf("r1");
    const sourceSteps = await historyOf(store, "r1");
    const at = sourceSteps.find((s) => s.transitions.includes("plan → execute (sequential)"));
    if (!at) throw new Error("no step enters execute");

    const calls: ModelCall[] = [];
    const result = await forkedToEnd(target, at.step, "f1", calls);
    expect(result.status).toBe("done");
    expect(result.results.plan?.stageExecutionId).toBe("f1/plan/1");

    // plan ran in the source only; the fork asked the model for execute and review, as the source did.
    const asked = (list: ModelCall[], run: string) =>
      list.map((c) => c.key.replace(`${run}/`, "")).filter((k) => !k.startsWith("plan/"));
    expect(calls.some((c) => c.key.startsWith("f1/plan/"))).toBe(false);
    expect(asked(calls, "f1")).toEqual(asked(original, "r1"));

    const audit = await store.auditOf("f1");
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
    expect(await store.auditOf("r1")).toEqual(sourceAudit);
    expect(await historyOf(store, "r1")).toEqual(sourceSteps);
    expect(await store.getRun("r1")).toMatchObject({ ok: true, value: { status: "done" } });
    expect(await store.getRun("f1")).toMatchObject({ ok: true, value: { status: "done" } });
    expect(await store.leaseHolder("f1")).toBeUndefined();
  });

  it("in the middle of a stage, reuses its recorded model replies and continues its conversation", async () => {
    const target = await finishedRun();
    const { store, calls: original } = target;
    // The step that recorded execute's first model turn: execute is still running after it.
    const turns = (await store.auditOf("r1")).filter(
      (e) => e.type === "ModelTurn" && e.stageId === "execute",
    );
    const firstTurn = turns[0]?.seq ?? 0;
    const at = (await historyOf(store, "r1")).find((s) => s.seq && s.seq.to >= firstTurn);
    if (at?.state !== "execute") throw new Error("no step inside execute");

    const calls: ModelCall[] = [];
    expect((await forkedToEnd(target, at.step, "f2", calls)).status).toBe("done");
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
    const target = await finishedRun();
    const { store } = target;
    const turns = (await store.auditOf("r1")).filter(
      (e) => e.type === "ModelTurn" && e.stageId === "execute",
    );
    // The step of execute's second model turn: its Edit call has run and been answered by then.
    const at = (await historyOf(store, "r1")).find(
      (s) => s.seq && s.seq.to >= (turns[1]?.seq ?? 0),
    );
    if (at?.state !== "execute") throw new Error("no step inside execute after its tool call");
    expect((await forkedToEnd(target, at.step, "f3", [])).status).toBe("done");
    const edit = async (run: string) =>
      (await store.read(`${run}/execute/1`)).find((e) => e.role === "tool" && e.tool === "Edit");
    expect(await edit("r1")).toMatchObject({ role: "tool", isError: false });
    expect(await edit("f3")).toEqual(await edit("r1"));
  });

  it("changes ctx with set, audited, and refuses a ctx the pipeline's schema rejects", async () => {
    const target = await finishedRun();
    const { store } = target;
    const refused = await createFork(codeReview(), "r1", {
      store,
      at: 2,
      runId: "bad",
      set: { task: 5 },
    });
    expect(refused.ok ? undefined : refused.error.code).toBe("Validation/RunContextInvalid");
    expect((await store.getRun("bad")).ok).toBe(false);

    const created = await createFork(codeReview(), "r1", {
      store,
      at: 2,
      runId: "f3",
      set: { task: "rename auth" },
    });
    if (!created.ok) throw created.error;
    expect((await finished(target.resume(codeReview(), "f3", { host: hostOf() }))).status).toBe(
      "done",
    );
    expect((await store.auditOf("f3"))[0]?.payload).toMatchObject({ set: { task: "rename auth" } });
    expect(await store.getRun("f3")).toMatchObject({
      ok: true,
      value: { options: { ctx: { task: "rename auth" } } },
    });
    const snapshot = await store.getSnapshot("f3");
    expect(snapshot.ok && snapshot.value.snapshot).toMatchObject({
      context: { runId: "f3", ctx: { task: "rename auth" } },
    });
  });

  it("stores resumeWith in place of the source's settings, keeping the source's definition and outline", async () => {
    const target = await fresh();
    const { store } = target;
    const source = { model: "scripted:/beside.script.yaml", defaultModel: true, root: "/r" };
    await finished(
      target.start(codeReview(), { host: hostOf(), runId: "r1", task: "t", resumeWith: source }),
    );
    const created = await createFork(codeReview(), "r1", {
      store,
      at: 1,
      runId: "f1",
      resumeWith: { model: "scripted:/other.script.yaml", root: "/r" },
    });
    if (!created.ok) throw created.error;
    const [before, after] = [await store.getRun("r1"), await store.getRun("f1")];
    if (!before.ok || !after.ok) throw new Error("a run is missing");
    expect(after.value.options).toEqual({
      model: "scripted:/other.script.yaml",
      root: "/r",
      ctx: { task: "t" },
      definition: before.value.options.definition,
      outline: before.value.options.outline,
    });
    expect(after.value.options.outline).toMatchObject({ id: "code-review", entry: "plan" });
  });

  it("forks from the source run the caller read already, without reading it again", async () => {
    const { store } = await finishedRun();
    const read = await store.getRun("r1");
    if (!read.ok) throw read.error;
    const runsRead: string[] = [];
    const counting = new Proxy(store, {
      get(target, key) {
        if (key === "getRun")
          return (runId: string) => {
            runsRead.push(runId);
            return target.getRun(runId);
          };
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const created = await createFork(codeReview(), "r1", {
      store: counting,
      at: 2,
      runId: "f8",
      source: read.value,
    });
    expect(created).toMatchObject({ ok: true, value: { runId: "f8", pipelineId: "code-review" } });
    expect(runsRead).toEqual([]);
    expect(await store.getRun("f8")).toMatchObject({
      ok: true,
      value: { definitionHash: read.value.definitionHash, status: "running" },
    });
  });

  it("reads the source run itself when the record it is handed is another run's", async () => {
    const { store } = await finishedRun();
    const read = await store.getRun("r1");
    if (!read.ok) throw read.error;
    const created = await createFork(codeReview(), "r1", {
      store,
      at: 2,
      runId: "f9",
      source: { ...read.value, runId: "someone-else", definitionHash: "not-r1s-hash" },
    });
    expect(created).toMatchObject({ ok: true, value: { runId: "f9" } });
    expect(await store.getRun("f9")).toMatchObject({
      ok: true,
      value: { definitionHash: read.value.definitionHash },
    });
  });

  it("stores a fork queued, for a worker to take and resume, when asked", async () => {
    const target = await finishedRun();
    const created = await createFork(codeReview(), "r1", {
      store: target.store,
      at: 2,
      runId: "f4",
      queued: true,
    });
    expect(created).toMatchObject({ ok: true, value: { runId: "f4", pipelineId: "code-review" } });
    expect(await target.store.getRun("f4")).toMatchObject({
      ok: true,
      value: { status: "queued" },
    });
    const result = await finished(target.resume(codeReview(), "f4", { host: hostOf() }));
    expect(result.status).toBe("done");
    expect((await target.store.auditOf("f4")).map((e) => e.type).slice(0, 2)).toEqual([
      "RunForked",
      "RunResumed",
    ]);
  });

  it("refuses a run that is not there, a step it does not have, a run id that is taken, and a step with no fork marks", async () => {
    const { store, sql } = await finishedRun();
    const codeOf = async (forked: Promise<Result<unknown>>) => {
      const result = await forked;
      return result.ok ? undefined : result.error.code;
    };
    const fork = (source: string, at: number, runId?: string) =>
      codeOf(createFork(codeReview(), source, { store, at, ...(runId && { runId }) }));
    expect(await fork("nope", 1)).toBe("Session/RunNotFound");
    expect(await fork("r1", 999)).toBe("Validation/ForkStepUnknown");
    expect(await fork("r1", 1, "r1")).toBe("Session/RunExists");
    // As a step committed by a store older than fork marks: nothing is written.
    await sql("UPDATE steps SET journal_mark = NULL, transcript_mark = NULL WHERE step = 1");
    expect(await fork("r1", 1, "f9")).toBe("Session/ForkUnavailable");
    expect((await store.getRun("f9")).ok).toBe(false);
  });
  it("refuses a pipeline changed since the source was saved before storing anything, unless forced", async () => {
    const { store } = await finishedRun();
    const refused = await createFork(codeReviewChanged(), "r1", { store, at: 2, runId: "f5" });
    expect(refused.ok ? undefined : refused.error.code).toBe("Session/DefinitionDrift");
    expect(refused.ok ? undefined : refused.error.message).toContain("stage review changed");
    expect((await store.getRun("f5")).ok).toBe(false);
    const forced = await createFork(codeReviewChanged(), "r1", {
      store,
      at: 2,
      runId: "f5",
      force: true,
    });
    expect(forced).toMatchObject({ ok: true, value: { runId: "f5" } });
  });

  it("ends a fork whose resume was refused as failed, the refusal audited, so nothing resumes it", async () => {
    const target = await finishedRun();
    const { store } = target;
    const at = (await historyOf(store, "r1")).find((s) => s.state === "review");
    if (!at) throw new Error("no step in review");
    const created = await createFork(codeReview(), "r1", { store, at: at.step, runId: "f6" });
    if (!created.ok) throw created.error;
    const answers = [{ proposalId: "bogus", decision: "approve" as const }];
    const refused = await target.resume(codeReview(), "f6", { host: hostOf(), answers });
    if (refused.ok) throw new Error("an answer to no request was taken");
    const ended = await endRefusedFork(store, "f6", refused.error);
    expect(ended.code).toBe("Session/NoPendingGrant");

    expect(await store.getRun("f6")).toMatchObject({
      ok: true,
      value: { status: "failed", error: { code: "Session/NoPendingGrant" } },
    });
    const audit = await store.auditOf("f6");
    expect(audit.map((e) => e.type)).toEqual(["RunForked", "RequestRefused", "RunFailed"]);
    expect(audit[2]?.payload).toMatchObject({
      refused: true,
      error: { code: "Session/NoPendingGrant" },
    });
    expect(await store.leaseHolder("f6")).toBeUndefined();
    const again = await target.resume(codeReview(), "f6", { host: hostOf() });
    expect(again.ok ? undefined : again.error.code).toBe("Session/RunFinished");
  });
}
