import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { forkRun } from "../../src/runtime/fork-run.js";
import { pruneRuns } from "../../src/runtime/prune.js";
import { type RunResult, resumeRun, startRun } from "../../src/runtime/run.js";
import { type HistoryStep, runHistory } from "../../src/runtime/run-history.js";
import { SqliteStore } from "../../src/store/index.js";
import { modelHarness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { codeReview, countingModel, forkingSpec, type ModelCall } from "./support/forking.js";

function openStore(file: string): SqliteStore {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

async function finished(started: Awaited<ReturnType<typeof startRun>>): Promise<RunResult> {
  if (!started.ok) throw started.error;
  return started.value.result;
}

/** A finished durable run of code-review (r1), and the model calls it made. */
async function finishedRun() {
  const store = openStore(join(tempDir(), "runs.db"));
  const calls: ModelCall[] = [];
  const { host } = modelHarness(countingModel(calls));
  const result = await finished(
    await startRun(codeReview(), { host, store, runId: "r1", task: "refactor auth module" }),
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

describe("forking a run at a step, on the SQLite store", () => {
  forkingSpec(async () => {
    const file = join(tempDir(), "runs.db");
    const store = openStore(file);
    return {
      store: store,
      start: async (pipeline, options) => await startRun(pipeline, { ...options, store }),
      resume: async (pipeline, runId, options) =>
        await resumeRun(pipeline, runId, { ...options, store }),
      sql: async (text) => {
        const db = new Database(file);
        db.prepare(text).run();
        db.close();
      },
    };
  });

  it("forkRun creates the fork and resumes it in this process", async () => {
    const { store, calls: original } = await finishedRun();
    const at = historyOf(store, "r1").find((s) => s.state === "execute");
    if (!at) throw new Error("no step in execute");
    const calls: ModelCall[] = [];
    const forked = await forkRun(codeReview(), "r1", {
      host: modelHarness(countingModel(calls)).host,
      store,
      at: at.step,
      runId: "f1",
    });
    if (!forked.ok) throw forked.error;
    expect((await forked.value.result).status).toBe("done");
    expect(
      store
        .auditOf("f1")
        .map((e) => e.type)
        .slice(0, 2),
    ).toEqual(["RunForked", "RunResumed"]);
    // plan's calls were recorded by then: only the source made them.
    const plan = (list: ModelCall[]) => list.filter((c) => /^\w+\/plan\//.test(c.key));
    expect(plan(original).length).toBeGreaterThan(0);
    expect(plan(calls)).toEqual([]);
  });

  it("of a run whose step history was pruned starts only from its last snapshot", async () => {
    const { store } = await finishedRun();
    const steps = historyOf(store, "r1");
    const early = steps.find((s) => s.state === "execute");
    if (!early) throw new Error("no step in execute");
    const pruned = await pruneRuns(store, { keep: 0, historyOnly: true });
    if (!pruned.ok) throw pruned.error;
    expect(pruned.value.runs.map(({ runId }) => runId)).toEqual(["r1"]);
    const host = modelHarness(countingModel([])).host;
    const refused = await forkRun(codeReview(), "r1", { host, store, at: early.step, runId: "f1" });
    expect(refused.ok ? undefined : refused.error).toMatchObject({
      code: "Session/ForkUnavailable",
      message: expect.stringContaining("pruned down to its last snapshot"),
    });
    const last = steps.at(-1)?.step ?? 0;
    const forked = await forkRun(codeReview(), "r1", { host, store, at: last, runId: "f2" });
    if (!forked.ok) throw forked.error;
    expect((await forked.value.result).status).toBe("done");
  });

  it("forkRun refuses answers the fork does not wait for before storing it", async () => {
    const { store } = await finishedRun();
    const at = historyOf(store, "r1").find((s) => s.state === "review");
    if (!at) throw new Error("no step in review");
    const forked = await forkRun(codeReview(), "r1", {
      host: modelHarness(countingModel([])).host,
      store,
      at: at.step,
      runId: "f1",
      answers: [{ proposalId: "bogus", decision: "approve" }],
    });
    expect(forked.ok ? undefined : forked.error.code).toBe("Session/NoPendingGrant");
    expect(store.getRun("f1")).toMatchObject({ ok: false, error: { code: "Session/RunNotFound" } });
  });
});
