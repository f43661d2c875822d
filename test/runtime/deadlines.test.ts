import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Interactor } from "../../src/compiler/interactor.js";
import type { PipelineDefinition, PipelineStage } from "../../src/definitions/pipeline-types.js";
import type { AskFallback, GrantFallback } from "../../src/definitions/wait-timeout.js";
import type { AuditEvent } from "../../src/events/audit.js";
import type { RunResult } from "../../src/runtime/launch.js";
import { type RunHandle, resumeRun, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { CODE_REVIEW_SCRIPT, code, llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

/** A clock the test moves on, as time passing between a run and its resume. */
function movableClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    pass: (ms: number) => {
      offset += ms;
    },
  };
}

/** Somebody who is asked every question and answers none, until the question is withdrawn. */
const nobody: Interactor = {
  name: "away",
  requestGrant: (_, signal) => never(signal),
  askValue: (_, signal) => never(signal),
};

const never = (signal: AbortSignal) =>
  new Promise<never>((_, reject) =>
    signal.addEventListener("abort", () => reject(signal.reason), { once: true }),
  );

const DECISION = {
  type: "object",
  required: ["approved"],
  properties: { approved: { type: "boolean" } },
  additionalProperties: false,
};

/** A person decides whether to ship, within `afterMs`; a timed-out fail goes to `late`. */
const decision = (afterMs: number, fallback: AskFallback): PipelineDefinition => {
  const decide: PipelineStage = {
    kind: "ask",
    id: "decide",
    prompt: "Ship it?",
    schema: DECISION,
    timeout: { afterMs, fallback },
  };
  return pipelineOf({
    id: "decision",
    stages: [
      decide,
      code("ship", () => ({ verdict: "ok", output: { shipped: true } })),
      code("late", () => ({ verdict: "ok", output: { late: true } })),
    ],
    next: {
      decide: {
        kind: "rules",
        rules: [
          {
            when: { path: "error.code", op: "equals", value: "Cancellation/WaitTimedOut" },
            to: "late",
          },
          { when: { path: "output.approved", op: "equals", value: true }, to: "ship" },
          { to: "fail" },
        ],
      },
      ship: "done",
      late: "done",
    },
  });
};

/** The code-review plan, whose first call (Edit) is outside its envelope: a grant request. */
const codeReview = (afterMs: number, fallback: GrantFallback): PipelineDefinition =>
  pipelineOf({
    id: "code-review",
    stages: [
      llm("plan"),
      llm("execute"),
      llm("review"),
      code("late", () => ({ verdict: "ok", output: { late: true } })),
    ],
    next: {
      plan: {
        kind: "rules",
        rules: [
          {
            when: { path: "error.code", op: "equals", value: "Cancellation/WaitTimedOut" },
            to: "late",
          },
          { to: "execute" },
        ],
      },
      execute: "review",
      review: "done",
      late: "done",
    },
    grants: { approve: ["Edit(src/auth.ts)"], deny: [], timeout: { afterMs, fallback } },
  });

/** Only plan's first call asks: the grants block approves execute's. */
const planOnly = (pipeline: PipelineDefinition): PipelineDefinition => ({
  ...pipeline,
  grants: { ...pipeline.grants, approve: [] },
});

function openStore(file: string): SqliteStore {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

function handleOf(started: Awaited<ReturnType<typeof startRun>>): RunHandle {
  if (!started.ok) throw started.error;
  return started.value;
}

/** The deadline of what a suspended run waits for first. */
function waitDeadline(result: RunResult): string {
  const wait = result.waiting?.[0];
  if (wait === undefined || !("deadline" in wait) || wait.deadline === undefined)
    throw new Error("the run waits for nothing with a deadline");
  return wait.deadline;
}

const ofType = (events: readonly AuditEvent[], type: AuditEvent["type"]) =>
  events.filter((event) => event.type === type);

describe("a grant request with a deadline, in a live run", () => {
  it("is denied at the deadline when nobody answers, and the model is told, as of a person's denial", async () => {
    const h = harness(CODE_REVIEW_SCRIPT, { interactors: [nobody] });
    const pipeline = planOnly(codeReview(200, "deny"));
    const started = Date.now();
    const run = handleOf(await startRun(pipeline, { host: h.host, runId: "g1", task: "t" }));
    const result = await run.result;

    expect(result.status).toBe("done");
    const [requested] = ofType(h.audit.events, "GrantRequested");
    const deadline = requested?.payload.deadline as string;
    // The audit log stamps events to its millisecond clock: about `at` plus the timeout.
    expect(Date.parse(deadline) - Date.parse(requested?.at as string)).toBeGreaterThan(190);
    const timedOut = ofType(h.audit.events, "WaitTimedOut");
    expect(timedOut).toHaveLength(1);
    expect(timedOut[0]).toMatchObject({
      stageId: "plan",
      payload: { kind: "grant", deadline, fallback: "deny", proposalId: "g1/plan/1/a1/t1/c0" },
    });
    expect(Date.parse(timedOut[0]?.at as string)).toBeGreaterThanOrEqual(Date.parse(deadline));
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(ofType(h.audit.events, "ToolDenied")[0]?.payload).toMatchObject({
      tool: "Edit",
      source: "deadline",
      code: "ToolTerminal/GrantDenied",
    });
    // The model reads the denial as the call's result, and plan goes on to complete.
    const transcript = JSON.stringify(run.transcript("g1/plan/1"));
    expect(transcript).toContain("before its deadline, so the call is denied");
    expect(result.results.plan?.verdict).toBe("ok");
  });

  it("is not timed out when somebody answers in time", async () => {
    const h = harness(CODE_REVIEW_SCRIPT, {
      interactors: [{ name: "quick", requestGrant: async () => "approve" }],
    });
    const result = await handleOf(
      await startRun(planOnly(codeReview(5_000, "deny")), { host: h.host, runId: "g2", task: "t" }),
    ).result;
    expect(result.status).toBe("done");
    expect(ofType(h.audit.events, "WaitTimedOut")).toEqual([]);
    expect(ofType(h.audit.events, "GrantIssued")).toHaveLength(1);
  });

  it("fails its stage with Cancellation/WaitTimedOut when its fallback is fail, which a rule routes", async () => {
    const h = harness(CODE_REVIEW_SCRIPT, { interactors: [nobody] });
    const result = await handleOf(
      await startRun(planOnly(codeReview(150, "fail")), { host: h.host, runId: "g3", task: "t" }),
    ).result;

    expect(result.results.plan).toMatchObject({
      verdict: "fail",
      error: { code: "Cancellation/WaitTimedOut" },
    });
    expect(result.results.late?.output).toEqual({ late: true });
    expect(result.status).toBe("done");
    expect(ofType(h.audit.events, "WaitTimedOut")[0]?.payload).toMatchObject({
      kind: "grant",
      fallback: "fail",
    });
    expect(ofType(h.audit.events, "ToolDenied")).toEqual([]);
  });
});

describe("an ask stage with a deadline, in a live run", () => {
  it("takes its default answer at the deadline when nobody answers", async () => {
    const h = harness("stages: {}", { interactors: [nobody] });
    const result = await handleOf(
      await startRun(decision(200, { answer: { approved: true } }), { host: h.host, runId: "a1" }),
    ).result;

    expect(result.status).toBe("done");
    expect(result.results.decide?.output).toEqual({ approved: true });
    expect(result.results.ship?.output).toEqual({ shipped: true });
    const [requested] = ofType(h.audit.events, "InputRequested");
    const deadline = requested?.payload.deadline as string;
    // The audit log stamps events to its millisecond clock: about `at` plus the timeout.
    expect(Date.parse(deadline) - Date.parse(requested?.at as string)).toBeGreaterThan(190);
    expect(ofType(h.audit.events, "WaitTimedOut").map((e) => e.payload)).toEqual([
      { kind: "ask", deadline, fallback: "answer" },
    ]);
    expect(ofType(h.audit.events, "InputAnswered")[0]?.payload).toEqual({
      value: { approved: true },
      by: "deadline",
    });
  });

  it("fails with Cancellation/WaitTimedOut when its fallback is fail, which a rule routes", async () => {
    const h = harness("stages: {}", { interactors: [nobody] });
    const result = await handleOf(
      await startRun(decision(150, "fail"), { host: h.host, runId: "a2" }),
    ).result;

    expect(result.results.decide).toMatchObject({
      verdict: "fail",
      error: { code: "Cancellation/WaitTimedOut" },
    });
    expect(result.results.late?.output).toEqual({ late: true });
    expect(ofType(h.audit.events, "StageExited")[0]).toMatchObject({
      stageId: "decide",
      payload: { verdict: "fail", error: { code: "Cancellation/WaitTimedOut" } },
    });
  });
});

describe("a deadline across a restart", () => {
  it("an ask suspended past its deadline takes its fallback at once on resume, audited once", async () => {
    const file = join(tempDir(), "runs.db");
    const clock = movableClock();
    const pipeline = decision(1_000, { answer: { approved: true } });
    const first = await handleOf(
      await startRun(pipeline, {
        host: harness("stages: {}", { clock }).host,
        store: openStore(file),
        runId: "r1",
      }),
    ).result;
    expect(first.status).toBe("suspended");
    const deadline = waitDeadline(first);

    clock.pass(1_500);
    const store = openStore(file);
    const started = Date.now();
    const resumed = handleOf(
      await resumeRun(pipeline, "r1", { host: harness("stages: {}", { clock }).host, store }),
    );
    const result = await resumed.result;
    expect(Date.now() - started).toBeLessThan(800);
    expect(result.status).toBe("done");
    expect(result.results.ship?.output).toEqual({ shipped: true });
    const events = store.auditOf("r1");
    expect(ofType(events, "WaitTimedOut").map((e) => e.payload)).toEqual([
      { kind: "ask", deadline, fallback: "answer" },
    ]);
    expect(ofType(events, "InputAnswered").map((e) => e.payload.by)).toEqual(["deadline"]);
  });

  it("an answer that comes with a resume after the deadline is too late: the fallback is taken", async () => {
    const file = join(tempDir(), "runs.db");
    const clock = movableClock();
    const pipeline = decision(1_000, "fail");
    await handleOf(
      await startRun(pipeline, {
        host: harness("stages: {}", { clock }).host,
        store: openStore(file),
        runId: "r2",
      }),
    ).result;
    clock.pass(1_500);
    const store = openStore(file);
    const result = await handleOf(
      await resumeRun(pipeline, "r2", {
        host: harness("stages: {}", { clock }).host,
        store,
        inputs: [{ value: { approved: true }, by: "alice" }],
      }),
    ).result;
    expect(result.results.decide?.error?.code).toBe("Cancellation/WaitTimedOut");
    expect(result.results.ship).toBeUndefined();
    expect(ofType(store.auditOf("r2"), "WaitTimedOut")).toHaveLength(1);
    expect(ofType(store.auditOf("r2"), "InputAnswered")).toEqual([]);
  });

  it("a grant request suspended past its deadline is denied at once on resume, and the run goes on", async () => {
    const file = join(tempDir(), "runs.db");
    const clock = movableClock();
    const pipeline = planOnly(codeReview(1_000, "deny"));
    const headless = () => harness(CODE_REVIEW_SCRIPT, { unansweredGrants: "suspend", clock }).host;
    const first = await handleOf(
      await startRun(pipeline, {
        host: headless(),
        store: openStore(file),
        runId: "r3",
        task: "t",
      }),
    ).result;
    expect(first).toMatchObject({ status: "suspended", waiting: [{ kind: "grant" }] });

    clock.pass(1_500);
    const store = openStore(file);
    const started = Date.now();
    const result = await handleOf(await resumeRun(pipeline, "r3", { host: headless(), store }))
      .result;
    expect(Date.now() - started).toBeLessThan(800);
    expect(result.status).toBe("done");
    const events = store.auditOf("r3");
    expect(ofType(events, "WaitTimedOut")).toHaveLength(1);
    expect(ofType(events, "ToolDenied")[0]?.payload).toMatchObject({ source: "deadline" });
  });

  it("a run killed while a grant request was asked, resumed past its deadline, fails the stage at once", async () => {
    const file = join(tempDir(), "runs.db");
    const clock = movableClock();
    const pipeline = planOnly(codeReview(1_000, "fail"));
    const first = handleOf(
      await startRun(pipeline, {
        host: harness(CODE_REVIEW_SCRIPT, { interactors: [nobody], clock }).host,
        store: openStore(file),
        runId: "r4",
        task: "t",
      }),
    );
    for await (const event of first.events())
      if (event.type === "GrantRequested") {
        first.stop();
        break;
      }
    await first.result;

    clock.pass(1_500);
    const store = openStore(file);
    const started = Date.now();
    const result = await handleOf(
      await resumeRun(pipeline, "r4", {
        host: harness(CODE_REVIEW_SCRIPT, { interactors: [nobody], clock }).host,
        store,
      }),
    ).result;
    expect(Date.now() - started).toBeLessThan(800);
    expect(result.results.plan?.error?.code).toBe("Cancellation/WaitTimedOut");
    expect(result.results.late?.output).toEqual({ late: true });
    expect(ofType(store.auditOf("r4"), "WaitTimedOut")).toHaveLength(1);
  });

  it("a resume before the deadline waits only the time left", async () => {
    const file = join(tempDir(), "runs.db");
    const clock = movableClock();
    const pipeline = decision(1_500, { answer: { approved: true } });
    const first = await handleOf(
      await startRun(pipeline, {
        host: harness("stages: {}", { clock }).host,
        store: openStore(file),
        runId: "r5",
      }),
    ).result;
    const deadline = Date.parse(waitDeadline(first));

    clock.pass(1_100);
    const store = openStore(file);
    const resumedAt = clock.now();
    const result = await handleOf(
      await resumeRun(pipeline, "r5", {
        host: harness("stages: {}", { interactors: [nobody], clock }).host,
        store,
      }),
    ).result;
    const waited = clock.now() - resumedAt;
    expect(result.status).toBe("done");
    // About 400 ms were left of 1,500: the wait did not start over.
    expect(waited).toBeGreaterThanOrEqual(deadline - resumedAt - 5);
    expect(waited).toBeLessThan(1_000);
    expect(ofType(store.auditOf("r5"), "WaitTimedOut")).toHaveLength(1);
  });

  it("a headless resume before the deadline suspends again with the same deadline", async () => {
    const file = join(tempDir(), "runs.db");
    const clock = movableClock();
    const pipeline = decision(60_000, "fail");
    const first = await handleOf(
      await startRun(pipeline, {
        host: harness("stages: {}", { clock }).host,
        store: openStore(file),
        runId: "r6",
      }),
    ).result;
    clock.pass(10_000);
    const again = await handleOf(
      await resumeRun(pipeline, "r6", {
        host: harness("stages: {}", { clock }).host,
        store: openStore(file),
      }),
    ).result;
    expect(again.status).toBe("suspended");
    expect(again.waiting).toEqual(first.waiting);
  });
});
