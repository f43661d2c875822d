import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../src/events/audit.js";
import { type RunHandle, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { CODE_REVIEW_SCRIPT, llm, pipelineOf } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

/** Plan, execute, review: the LLM stages the code-review script answers. */
const codeReview = () =>
  pipelineOf({
    id: "plan-execute-review",
    context: { type: "object", required: ["task"], properties: { task: { type: "string" } } },
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review", review: "done" },
  });

const started = <T>(result: { ok: true; value: T } | { ok: false; error: unknown }): T => {
  if (!result.ok) throw result.error;
  return result.value;
};

async function eventsOf(run: RunHandle): Promise<AuditEvent[]> {
  const events: AuditEvent[] = [];
  for await (const event of run.events({ deltas: false })) events.push(event);
  return events;
}

describe("the machine a run drives", () => {
  it("is one for every run of a pipeline on a host, each run's work its own", async () => {
    const h = harness(CODE_REVIEW_SCRIPT);
    const pipeline = codeReview();
    const one = started(await startRun(pipeline, { host: h.host, task: "a", runId: "run-1" }));
    const two = started(await startRun(pipeline, { host: h.host, task: "b", runId: "run-2" }));
    const shared = one.actor?.logic;
    expect(shared).toBeDefined();
    expect(two.actor?.logic).toBe(shared);
    const [events1, events2] = await Promise.all([eventsOf(one), eventsOf(two)]);
    expect((await one.result).status).toBe("done");
    expect((await two.result).status).toBe("done");
    // Each run's events, and only its own, went to its reader and to the host's log.
    expect(events1.every((e) => e.runId === "run-1")).toBe(true);
    expect(events2.every((e) => e.runId === "run-2")).toBe(true);
    expect(events1).toEqual(h.audit.of("run-1"));
    expect(events2).toEqual(h.audit.of("run-2"));
    expect(events1.map((e) => e.type)).toEqual(events2.map((e) => e.type));
    // A later run of the same id takes the same machine again once the first has settled.
    const again = started(await startRun(pipeline, { host: h.host, task: "c", runId: "run-1" }));
    expect(again.actor?.logic).toBe(shared);
    expect((await again.result).status).toBe("done");
  });

  it("is a machine of its own for a run whose id is already going on the host", async () => {
    const h = harness(CODE_REVIEW_SCRIPT);
    const pipeline = codeReview();
    const first = started(await startRun(pipeline, { host: h.host, task: "a", runId: "run-1" }));
    const twin = started(await startRun(pipeline, { host: h.host, task: "a", runId: "run-1" }));
    expect(twin.actor?.logic).not.toBe(first.actor?.logic);
    expect((await first.result).status).toBe("done");
    expect((await twin.result).status).toBe("done");
  });

  it("keeps each durable run's steps in its own rows of the store", async () => {
    const h = harness(CODE_REVIEW_SCRIPT);
    const opened = SqliteStore.open(join(tempDir(), "runs.db"));
    if (!opened.ok) throw opened.error;
    const store = opened.value;
    try {
      const pipeline = codeReview();
      const runs = await Promise.all(
        ["run-1", "run-2"].map(async (runId) =>
          started(await startRun(pipeline, { host: h.host, store, task: runId, runId })),
        ),
      );
      expect(runs[0]?.actor?.logic).toBe(runs[1]?.actor?.logic);
      for (const run of runs) expect((await run.result).status).toBe("done");
      for (const runId of ["run-1", "run-2"]) {
        const stored = store.auditOf(runId);
        expect(stored.every((e) => e.runId === runId)).toBe(true);
        expect(stored.at(-1)?.type).toBe("RunCompleted");
        expect(stored.filter((e) => e.type === "ModelTurn").length).toBeGreaterThan(0);
      }
      expect(store.auditOf("run-1").map((e) => e.type)).toEqual(
        store.auditOf("run-2").map((e) => e.type),
      );
    } finally {
      store.close();
    }
  });
});
