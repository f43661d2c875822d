import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import type { TransitionNotice } from "../../src/definitions/contract.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
// From the package entry: reopening is part of the library.
import { reopenRun } from "../../src/index.js";
import { type RunHandle, resumeRun, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { code, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { liveActor } from "./support/live-actor.js";

function openStore(): SqliteStore {
  const opened = SqliteStore.open(join(tempDir(), "runs.db"));
  if (!opened.ok) throw opened.error;
  return opened.value;
}

function handleOf(started: Awaited<ReturnType<typeof startRun>>): RunHandle {
  if (!started.ok) throw started.error;
  return started.value;
}

/**
 * plan → build → check → done; each code stage logs its execution and the upstream it was
 * handed, so a reopened run shows what ran again, as which visit, and with what. While
 * `hold.build`, build never ends (until cancelled).
 */
function steps(
  reopenable: boolean,
  ran: string[],
  notices: TransitionNotice[] = [],
  hold = { build: false },
) {
  const logged = (id: string) =>
    code(id, ({ ctx, signal }) => {
      ran.push(`${ctx.stageExecutionId}<-${ctx.upstream.map((r) => r.stageId).join(",")}`);
      if (id === "build" && hold.build)
        return new Promise((_, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason)),
        );
      return { verdict: "ok", output: { by: id } };
    });
  const pipeline: PipelineDefinition = {
    ...pipelineOf({
      id: "steps",
      stages: [logged("plan"), logged("build"), logged("check")],
      next: { plan: "build", build: "check", check: "done" },
      onTransition: (notice) => {
        notices.push(notice);
      },
    }),
    ...(reopenable && { reopenable: true }),
  };
  return pipeline;
}

async function doneRun(pipeline: PipelineDefinition, store: SqliteStore) {
  const h = harness("stages: {}");
  const handle = handleOf(
    await startRun(pipeline, { host: h.host, store, runId: "r1", task: "t" }),
  );
  expect((await handle.result).status).toBe("done");
  return h;
}

const FIRST = ["r1/plan/1<-", "r1/build/1<-plan", "r1/check/1<-build"];
const REASON = "the reviewer found a regression after acceptance";

describe("reopening a run that ended done (redo of a done run)", () => {
  it("a pipeline that does not opt in keeps done final: nothing runs and the run stays done", async () => {
    const store = openStore();
    const ran: string[] = [];
    const pipeline = steps(false, ran);
    const h = await doneRun(pipeline, store);
    const before = store.auditOf("r1").length;
    const reopened = await reopenRun(pipeline, "r1", {
      host: h.host,
      store,
      stage: "build",
      reason: REASON,
      by: "ana",
    });
    expect(reopened.ok ? undefined : reopened.error.code).toBe("Session/RunFinished");
    expect(ran).toEqual(FIRST);
    expect(store.auditOf("r1")).toHaveLength(before);
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "done" } });
  });

  it("reopenable: the run goes on from the named stage, with its id, and ends done again", async () => {
    const store = openStore();
    const ran: string[] = [];
    const notices: TransitionNotice[] = [];
    const pipeline = steps(true, ran, notices);
    const h = await doneRun(pipeline, store);
    const logged = store.auditOf("r1").length;
    notices.length = 0;
    const reopened = await reopenRun(pipeline, "r1", {
      host: h.host,
      store,
      stage: "build",
      reason: REASON,
      by: "ana",
    });
    if (!reopened.ok) throw reopened.error;
    expect(reopened.value.runId).toBe("r1");
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "running" } });
    expect(await reopened.value.result).toMatchObject({ runId: "r1", status: "done" });
    // build runs again, as its second execution, with what it got the first time; plan does not.
    expect(ran).toEqual([...FIRST, "r1/build/2<-plan", "r1/check/2<-build"]);
    const events = store.auditOf("r1").slice(logged);
    expect(events[0]).toMatchObject({
      type: "RunReopened",
      payload: { pipelineId: "steps", stage: "build", from: "check", by: "ana", reason: REASON },
    });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => logged + i + 1));
    const transitions = events
      .filter((e) => e.type === "SMTransition")
      .map((e) => `${e.payload.from}->${e.payload.to}`);
    expect(transitions).toEqual(["build->check", "check->done"]);
    expect(events.at(-1)?.type).toBe("RunCompleted");
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "done" } });
    expect(notices.map((n) => [n.state, n.visits])).toEqual([
      ["build", { plan: 1, build: 2, check: 1 }],
      ["check", { plan: 1, build: 2, check: 2 }],
      ["done", { plan: 1, build: 2, check: 2 }],
    ]);
  });

  it("without a stage, the run's last stage runs again", async () => {
    const store = openStore();
    const ran: string[] = [];
    const pipeline = steps(true, ran);
    const h = await doneRun(pipeline, store);
    const reopened = await reopenRun(pipeline, "r1", {
      host: h.host,
      store,
      reason: REASON,
      by: "ana",
    });
    if (!reopened.ok) throw reopened.error;
    expect((await reopened.value.result).status).toBe("done");
    expect(ran).toEqual([...FIRST, "r1/check/2<-build"]);
  });

  it("is refused without a reason, to a stage that never ran, and for a failed run; the run stays done", async () => {
    const store = openStore();
    const ran: string[] = [];
    const pipeline = steps(true, ran);
    const h = await doneRun(pipeline, store);
    const reopen = (stage: string | undefined, reason: string) =>
      reopenRun(pipeline, "r1", {
        host: h.host,
        store,
        reason,
        by: "ana",
        ...(stage && { stage }),
      });
    const codeOf = (result: Awaited<ReturnType<typeof reopenRun>>) =>
      result.ok ? undefined : result.error.code;
    expect(codeOf(await reopen("build", " "))).toBe("Validation/ReopenReasonMissing");
    expect(codeOf(await reopen("nowhere", REASON))).toBe("Session/IllegalTransition");
    const refusal = store.auditOf("r1").at(-1);
    expect(refusal).toMatchObject({
      type: "RequestRefused",
      payload: { control: { type: "REDO", stage: "nowhere" } },
    });
    expect(ran).toHaveLength(3);
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "done" } });
    // The lease was given back: a reopen can still happen.
    const again = await reopen("check", REASON);
    if (!again.ok) throw again.error;
    expect((await again.value.result).status).toBe("done");

    const failing = pipelineOf({
      id: "failing",
      stages: [code("only", () => ({ verdict: "fail", reason: "no" }))],
    });
    const fh = harness("stages: {}");
    const failed = handleOf(
      await startRun({ ...failing, reopenable: true }, { host: fh.host, store, runId: "r2" }),
    );
    expect((await failed.result).status).toBe("failed");
    const refused = await reopenRun({ ...failing, reopenable: true }, "r2", {
      host: fh.host,
      store,
      reason: REASON,
      by: "ana",
    });
    expect(codeOf(refused)).toBe("Session/RunFinished");
  });

  it("a reopened run stopped mid-way resumes like any other", async () => {
    const store = openStore();
    const ran: string[] = [];
    const hold = { build: false };
    const pipeline = steps(true, ran, [], hold);
    const h = await doneRun(pipeline, store);
    hold.build = true;
    const reopened = await reopenRun(pipeline, "r1", {
      host: h.host,
      store,
      stage: "plan",
      reason: REASON,
      by: "ana",
    });
    if (!reopened.ok) throw reopened.error;
    await waitFor(liveActor(reopened.value), (s) => s.context.current === "build");
    reopened.value.stop();
    expect((await reopened.value.result).status).toBe("suspended");
    // Not ended: a redo of it is a REDO sent to the resumed run, not a reopening.
    const live = await reopenRun(pipeline, "r1", {
      host: h.host,
      store,
      reason: REASON,
      by: "ana",
    });
    expect(live.ok ? undefined : live.error.code).toBe("Session/IllegalTransition");
    hold.build = false;
    const resumed = await resumeRun(pipeline, "r1", { host: h.host, store });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
    // build was in flight when stopped: it runs again as the same execution.
    expect(ran.slice(FIRST.length)).toEqual([
      "r1/plan/2<-",
      "r1/build/2<-plan",
      "r1/build/2<-plan",
      "r1/check/2<-build",
    ]);
    expect(store.getRun("r1")).toMatchObject({ ok: true, value: { status: "done" } });
  });
});
