import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type AnyActorRef, waitFor } from "xstate";
import { EMPTY_TABLE, lookup } from "../../src/compiler/stage-table.js";
import type { StageResult } from "../../src/definitions/contract.js";
import type { PipelineDefinition } from "../../src/definitions/pipeline-types.js";
import type { AuditSink } from "../../src/events/audit.js";
import type { HostOptions } from "../../src/runtime/host.js";
import { startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { code, pipelineOf, waits } from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { liveActor } from "./support/live-actor.js";

/** A code stage that counts its runs in memory, and says what the count was before. */
const counting = pipelineOf({
  id: "counting",
  stages: [
    code("count", async ({ memory }) => {
      const before = ((await memory.recall("counting", "runs")) as number | undefined) ?? 0;
      await memory.remember("counting", "runs", before + 1);
      return { verdict: "ok", output: { before } };
    }),
  ],
});

async function countOnce(host: ReturnType<typeof harness>["host"], store?: SqliteStore) {
  const started = await startRun(counting, { host, ...(store && { store }) });
  if (!started.ok) throw started.error;
  return (await started.value.result).output;
}

describe("a code stage's memory", () => {
  it("is the run store's in a durable run, so the next run on that store recalls it", async () => {
    const file = join(tempDir(), "runs.db");
    const open = () => {
      const opened = SqliteStore.open(file);
      if (!opened.ok) throw opened.error;
      return opened.value;
    };
    const first = open();
    expect(await countOnce(harness("stages: {}").host, first)).toEqual({ before: 0 });
    first.close();
    const second = open();
    expect(await countOnce(harness("stages: {}").host, second)).toEqual({ before: 1 });
    expect(second.recall("counting", "runs")).toBe(2);
    second.close();
  });

  it("is the host's own without a store: it lasts as long as the host", async () => {
    const { host } = harness("stages: {}");
    expect(await countOnce(host)).toEqual({ before: 0 });
    expect(await countOnce(host)).toEqual({ before: 1 });
    expect(await countOnce(harness("stages: {}").host)).toEqual({ before: 0 });
  });
});

/**
 * A run whose audit sink looks at the run one microtask after each code stage's `StageExited`:
 * the earliest moment a step commit could store that event with the run's snapshot.
 */
async function watchExits(pipeline: PipelineDefinition, options: Partial<HostOptions> = {}) {
  const h = harness("stages: {}", options);
  const seen: { stageId: string; running: boolean; recorded: boolean }[] = [];
  let actor: AnyActorRef | undefined;
  const audit: AuditSink = {
    emit(input) {
      const event = h.host.audit.emit(input);
      const stageId = event.stageId;
      const kind = stageId && pipeline.stages[stageId]?.kind;
      if (event.type === "StageExited" && stageId && (kind === "code" || kind === "command"))
        queueMicrotask(() => {
          const snapshot = actor?.getSnapshot();
          seen.push({
            stageId,
            running: snapshot?.children[stageId] !== undefined,
            recorded:
              lookup<StageResult>(snapshot?.context.results ?? EMPTY_TABLE, stageId)
                ?.stageExecutionId === event.stageExecutionId,
          });
        });
      return event;
    },
  };
  const started = await startRun(pipeline, { host: { ...h.host, audit }, runId: "exits" });
  if (!started.ok) throw started.error;
  actor = started.value.actor;
  return { run: started.value, result: started.value.result, seen, audit: h.audit };
}

describe("a code stage's StageExited", () => {
  it("is emitted by the transition that leaves the stage, so no step holds it while the stage runs", async () => {
    const pipeline = pipelineOf({
      stages: [
        code("first", () => ({ verdict: "ok", output: { n: 1 } })),
        { kind: "command", id: "listed", command: "echo fine", timeoutMs: 5000 },
        code("skipped", () => ({ verdict: "skip", reason: "nothing to do" })),
        code("thrown", () => {
          throw new Error("broken");
        }),
      ],
      next: { first: "listed", listed: "skipped", skipped: "thrown" },
    });
    const { result, seen, audit } = await watchExits(pipeline, { mode: "yolo" });
    expect((await result).status).toBe("failed");
    expect(seen).toEqual(
      ["first", "listed", "skipped", "thrown"].map((stageId) => ({
        stageId,
        running: false,
        recorded: true,
      })),
    );
    const exits = audit.of("exits").filter((e) => e.type === "StageExited");
    expect(exits.map((e) => [e.stageId, e.stageExecutionId, e.payload])).toEqual([
      ["first", "exits/first/1", { verdict: "ok", capHit: false, attemptCount: 1 }],
      ["listed", "exits/listed/1", { verdict: "ok", capHit: false, attemptCount: 1 }],
      [
        "skipped",
        "exits/skipped/1",
        { verdict: "skip", reason: "nothing to do", capHit: false, attemptCount: 1 },
      ],
      [
        "thrown",
        "exits/thrown/1",
        { verdict: "fail", reason: "broken", capHit: false, attemptCount: 1 },
      ],
    ]);
  });

  it("of a parallel sibling comes with the step that settles it", async () => {
    const pipeline = pipelineOf({
      stages: [
        code("start", () => ({ verdict: "ok" })),
        code("left", () => ({ verdict: "ok" })),
        code("right", () => ({ verdict: "ok" })),
        code("join", () => ({ verdict: "ok" })),
      ],
      next: {
        start: {
          kind: "parallel",
          siblings: ["left", "right"],
          join: "join",
          policy: { kind: "all-settled" },
        },
      },
    });
    const { result, seen } = await watchExits(pipeline);
    expect((await result).status).toBe("done");
    expect(seen.map((s) => s.stageId).sort()).toEqual(["join", "left", "right", "start"]);
    expect(seen.filter((s) => s.running || !s.recorded)).toEqual([]);
  });

  it("is not emitted for a stage cancelled while it ran: that stage is cancelled instead", async () => {
    const { run, result, audit } = await watchExits(
      pipelineOf({ stages: [waits("slow", 60_000)] }),
    );
    await waitFor(liveActor(run), (s) => s.context.current === "slow");
    expect(run.send({ type: "CANCEL", reason: "enough" }).ok).toBe(true);
    expect((await result).status).toBe("cancelled");
    const ends = audit
      .of("exits")
      .filter((e) => e.stageId === "slow")
      .map((e) => e.type);
    expect(ends).toEqual(["StageSetup", "StageCancelled"]);
  });
});

describe("a durable run's steps", () => {
  it("never commit a code stage's StageExited with a snapshot in which that stage still runs", async () => {
    const store = SqliteStore.open(join(tempDir(), "runs.db"));
    if (!store.ok) throw store.error;
    const commits: { exited: string[]; running: string[] }[] = [];
    const commitStep = store.value.commitStep.bind(store.value);
    store.value.commitStep = (runId, step) => {
      const children = (step.snapshot as { children?: Record<string, unknown> } | undefined)
        ?.children;
      commits.push({
        exited: step.events.flatMap((e) => (e.type === "StageExited" ? [e.stageId ?? ""] : [])),
        running: Object.keys(children ?? {}),
      });
      return commitStep(runId, step);
    };
    const pipeline = pipelineOf({
      stages: ["one", "two", "three"].map((id) => code(id, () => ({ verdict: "ok" }))),
      next: { one: "two", two: "three" },
    });
    const started = await startRun(pipeline, {
      host: harness("stages: {}").host,
      store: store.value,
    });
    if (!started.ok) throw started.error;
    expect((await started.value.result).status).toBe("done");
    store.value.close();
    expect(commits.flatMap((c) => c.exited)).toEqual(["one", "two", "three"]);
    expect(commits.filter((c) => c.exited.some((id) => c.running.includes(id)))).toEqual([]);
  });
});
