import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Snapshot, waitFor } from "xstate";
import { fingerprint } from "../../src/compiler/definition-hash.js";
import type { PipelineContext } from "../../src/compiler/pipeline-context.js";
import { recordOf } from "../../src/compiler/stage-table.js";
import { callbackInteractor } from "../../src/runtime/interactors.js";
import type { StepCommit } from "../../src/runtime/persistence.js";
import { resumeRun } from "../../src/runtime/run.js";
import { createStageActor } from "../../src/runtime/run-stage.js";
import { contextAsTables } from "../../src/runtime/snapshot-shape.js";
import { SqliteStore } from "../../src/store/index.js";
import { CODE_REVIEW_SCRIPT, llm, pipelineOf } from "../support/pipelines.js";
import { harness, loadStage, stageInput } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";

/**
 * Steps of durable code-review runs stored by the stage machine of 2026-11-24, whose Setup, Init,
 * CheckGate, Assert and Exit were each a state with its own actor (the snapshots in `init` and
 * `assert` are hand-built from the next step, as such a run stores them when its hooks are slow).
 */
interface Fixture {
  ctx: Record<string, unknown>;
  steps: StepCommit[];
  cuts: Record<string, number>;
  handBuilt: Record<string, { after: number; step: StepCommit }>;
  parked: StepCommit[];
}

const fixture = JSON.parse(
  readFileSync(
    join(import.meta.dirname, "../fixtures/stage-snapshots/code-review-2026-11-24.json"),
    "utf8",
  ),
) as Fixture;

const RUN_ID = "s1";
const pipeline = pipelineOf({
  id: "code-review",
  stages: [llm("plan"), llm("execute"), llm("review")],
  next: { plan: "execute", execute: "review" },
});

/** A fresh store holding `steps` of run `runId`: the last snapshot among them is the one resumed. */
function storedRun(runId: string, steps: readonly StepCommit[]): SqliteStore {
  const opened = SqliteStore.open(join(tempDir(), "runs.db"));
  if (!opened.ok) throw opened.error;
  const store = opened.value;
  const { hash, parts } = fingerprint(pipeline);
  const created = store.createRun({
    runId,
    pipelineId: pipeline.id,
    definitionHash: hash,
    options: { ctx: fixture.ctx, definition: parts },
  });
  if (!created.ok) throw created.error;
  for (const step of steps) store.commitStep(runId, step);
  return store;
}

const approving = () =>
  harness(CODE_REVIEW_SCRIPT, { interactors: [callbackInteractor("ui", () => "approve")] }).host;

const typesOf = (store: SqliteStore, runId: string) =>
  store
    .auditOf(runId)
    .map((event) => event.type)
    .filter((type) => type !== "RunResumed" && type !== "RunSuspended");

/** The run's steps up to each state the fixture was cut in (stored, or hand-built after a step). */
const cuts = [
  ...Object.entries(fixture.cuts).map(([state, at]) => ({
    state,
    steps: fixture.steps.slice(0, at + 1),
  })),
  ...Object.entries(fixture.handBuilt).map(([state, { after, step }]) => ({
    state,
    steps: [...fixture.steps.slice(0, after + 1), step],
  })),
];

/** The audit of the run as it went on uninterrupted when it was stored. */
const uninterrupted = fixture.steps.flatMap((step) => step.events.map((event) => event.type));

describe("a run stored by the stage machine of before (a state and an actor per phase)", () => {
  it.each(cuts)(
    "resumes from a stage stored in $state and ends as it would have",
    async ({ steps }) => {
      const store = storedRun(RUN_ID, steps);
      const resumed = await resumeRun(pipeline, RUN_ID, { host: approving(), store });
      if (!resumed.ok) throw resumed.error;
      const result = await resumed.value.result;
      expect(result.status).toBe("done");
      expect(Object.values(result.results).map((r) => r.verdict)).toEqual(["ok", "ok", "ok"]);
      // Every phase audited once, in order: none run again, none skipped.
      expect(typesOf(store, RUN_ID)).toEqual(uninterrupted);
      store.close();
    },
  );

  it("resumes a run parked mid-stage on a grant request, and takes the answer", async () => {
    const store = storedRun("s2", fixture.parked);
    const resumed = await resumeRun(pipeline, "s2", {
      host: approving(),
      store,
      answers: [{ proposalId: "s2/plan/1/a1/t1/c0", decision: "approve" }],
    });
    if (!resumed.ok) throw resumed.error;
    const result = await resumed.value.result;
    expect(result.status).toBe("done");
    expect(typesOf(store, "s2")).toEqual(uninterrupted);
    store.close();
  });
});

describe("a stage snapshot stored by the stage machine of before, restored on its own", () => {
  const stageEvents = (steps: readonly StepCommit[]) =>
    steps.flatMap((step) =>
      step.events.filter((event) => event.stageId === "plan").map((event) => event.type),
    );
  /** The plan stage's own snapshot, inside the run's. */
  const planSnapshot = (step: StepCommit) =>
    (step.snapshot as { children: { plan: { snapshot: Snapshot<unknown> } } }).children.plan
      .snapshot;

  it.each(cuts)(
    "from $state, through createStageActor, ends the stage as it would have",
    async ({ steps }) => {
      const stored = planSnapshot(steps[steps.length - 1] as StepCommit);
      const h = harness(CODE_REVIEW_SCRIPT, {
        interactors: [callbackInteractor("ui", () => "approve")],
      });
      const actor = createStageActor(h.host, stageInput(loadStage("plan")), { snapshot: stored });
      actor.start();
      const done = await waitFor(actor, (s) => s.status !== "active");
      expect(done.output?.verdict).toBe("ok");
      // Every phase audited once, in order: none run again, none skipped.
      const audited = stageEvents(steps).length;
      expect(h.types()).toEqual(stageEvents(fixture.steps).slice(audited));
    },
  );
});

describe("a pipeline snapshot stored before its context kept stage tables", () => {
  const result = (stageId: string) => ({
    stageId,
    stageExecutionId: `r/${stageId}/1`,
    verdict: "ok",
    capHit: false,
    attemptCount: 1,
  });
  const flat = {
    visits: { plan: 1, review: 2 },
    modelCalls: { plan: 3 },
    results: { review: result("review"), plan: result("plan") },
    upstreamOf: { plan: [], review: [result("plan")] },
    groups: { plan: { left: "settled", right: "running" } },
  };

  it("reads as tables, the stage that ended last being the last of its results", () => {
    const child = { src: "pipeline:sub", snapshot: { context: flat, children: {} } };
    const upgraded = contextAsTables({ context: flat, children: { sub: child } }) as {
      context: PipelineContext;
      children: { sub: { snapshot: { context: PipelineContext } } };
    };
    for (const { context } of [upgraded, upgraded.children.sub.snapshot]) {
      expect(recordOf(context.visits)).toEqual(flat.visits);
      expect(recordOf(context.modelCalls)).toEqual(flat.modelCalls);
      expect(recordOf(context.results)).toEqual(flat.results);
      expect(recordOf(context.upstreamOf)).toEqual(flat.upstreamOf);
      expect(recordOf(context.groups.plan ?? {})).toEqual(flat.groups.plan);
      expect(context.lastEnded).toBe("plan");
    }
  });

  it("is left as it is once in tables", () => {
    const once = contextAsTables({ context: flat, children: {} });
    expect(contextAsTables(once)).toEqual(once);
  });
});
