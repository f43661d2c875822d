import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { waitFor } from "xstate";
import { fingerprint } from "../../src/compiler/definition-hash.js";
import { StagechartError } from "../../src/errors.js";
import type { AuditEvent } from "../../src/events/audit.js";
import { callbackInteractor } from "../../src/runtime/interactors.js";
import type { StepCommit } from "../../src/runtime/persistence.js";
import { type RunHandle, resumeRun, startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { fillDisk } from "../store/support/temp-store.js";
import { walCommits } from "../store/support/wal-commits.js";
import {
  CODE_REVIEW_SCRIPT,
  code,
  codeReviewScriptOf,
  llm,
  pipelineOf,
  waits,
} from "../support/pipelines.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { liveActor } from "./support/live-actor.js";

function openStore(file = join(tempDir(), "runs.db")): SqliteStore {
  const opened = SqliteStore.open(file);
  if (!opened.ok) throw opened.error;
  return opened.value;
}

function handleOf(started: Awaited<ReturnType<typeof startRun>>): RunHandle {
  if (!started.ok) throw started.error;
  return started.value;
}

const chain = (slowMs: number, counter: { b: number }) =>
  pipelineOf({
    id: "chain",
    stages: [
      code("a", () => ({ verdict: "ok", output: { from: "a" } })),
      code("b", ({ signal }) => {
        counter.b += 1;
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => resolve({ verdict: "ok", output: { from: "b" } }), slowMs);
          signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(signal.reason);
          });
        });
      }),
      waits("c", 1),
    ],
    next: { a: "b", b: "c" },
  });

describe("a durable run", () => {
  it("commits every step: the stored audit log is the live one, gapless", async () => {
    const store = openStore();
    const h = harness(CODE_REVIEW_SCRIPT);
    const pipeline = pipelineOf({
      id: "code-review",
      stages: [llm("plan"), llm("execute"), llm("review")],
      next: { plan: "execute", execute: "review" },
    });
    const handle = handleOf(
      await startRun(pipeline, {
        host: h.host,
        store,
        runId: "r1",
        task: "t",
        resumeWith: { pipelineFile: "x.yaml" },
      }),
    );
    const live: AuditEvent[] = [];
    for await (const event of handle.events({ deltas: false })) live.push(event);
    const result = await handle.result;
    expect(result.status).toBe("done");
    const stored = store.auditOf("r1");
    expect(stored).toEqual(live);
    expect(stored.map((e) => e.seq)).toEqual(stored.map((_, i) => i + 1));
    expect(stored[0]?.type).toBe("RunStarted");
    expect(stored.at(-1)?.type).toBe("RunCompleted");
    const run = store.getRun("r1");
    expect(run.ok && run.value).toMatchObject({
      status: "done",
      options: { pipelineFile: "x.yaml", ctx: { task: "t" } },
    });
    expect(store.read("r1/plan/1")[0]).toMatchObject({ role: "system" });
    store.close();
  });

  it("ends in one commit after its last step: its status, and its lease given up with it", async () => {
    const file = join(tempDir(), "runs.db");
    const store = openStore(file);
    let afterLastStep = 0;
    const watched = Object.assign(Object.create(store) as SqliteStore, {
      commitStep(runId: string, step: StepCommit) {
        const recorded = store.commitStep(runId, step);
        afterLastStep = walCommits(file);
        return recorded;
      },
    });
    const pipeline = pipelineOf({
      id: "pair",
      stages: [code("a", () => ({ verdict: "ok" })), code("b", () => ({ verdict: "ok" }))],
      next: { a: "b" },
    });
    const handle = handleOf(
      await startRun(pipeline, { host: harness("stages: {}").host, store: watched, runId: "end" }),
    );

    expect((await handle.result).status).toBe("done");
    expect(walCommits(file) - afterLastStep).toBe(1);
    expect(store.leaseHolder("end")).toBeUndefined();
    store.close();
  });

  it("stopped mid-stage, resumes from its snapshot and finishes, repeating only the call in flight", async () => {
    const file = join(tempDir(), "runs.db");
    const counter = { b: 0 };
    const first = handleOf(
      await startRun(chain(5000, counter), {
        host: harness("stages: {}").host,
        store: openStore(file),
        runId: "r2",
      }),
    );
    await waitFor(liveActor(first), (s) => s.context.current === "b");
    first.stop();
    expect((await first.result).status).toBe("suspended");

    const store = openStore(file);
    const fast = chain(5, counter);
    const resumed = await resumeRun(fast, "r2", {
      host: harness("stages: {}").host,
      store,
      force: true,
    });
    if (!resumed.ok) throw resumed.error;
    const result = await resumed.value.result;
    expect(result.status).toBe("done");
    expect(counter.b).toBe(2);
    const types = store.auditOf("r2").map((e) => `${e.type}${e.stageId ? `:${e.stageId}` : ""}`);
    expect(types.filter((t) => t === "StageExited:a")).toHaveLength(1);
    expect(types).toContain("RunSuspended");
    expect(types.indexOf("RunResumed")).toBeGreaterThan(types.indexOf("RunSuspended"));
    const seqs = store.auditOf("r2").map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it("refuses to resume into a changed pipeline, naming what changed, unless forced", async () => {
    const file = join(tempDir(), "runs.db");
    const counter = { b: 0 };
    const first = handleOf(
      await startRun(chain(5000, counter), {
        host: harness("stages: {}").host,
        store: openStore(file),
        runId: "r3",
      }),
    );
    await waitFor(liveActor(first), (s) => s.context.current === "b");
    first.stop();
    await first.result;
    const changed = chain(5, counter);
    changed.stages.d = { kind: "code", id: "d", run: () => ({ verdict: "ok" }) };
    const refused = await resumeRun(changed, "r3", {
      host: harness("stages: {}").host,
      store: openStore(file),
    });
    expect(refused.ok ? undefined : refused.error.code).toBe("Session/DefinitionDrift");
    expect(refused.ok ? [] : refused.error.context.changes).toEqual(["stage d added"]);
    expect(openStore(file).auditOf("r3").at(-1)).toMatchObject({
      type: "RequestRefused",
      payload: { error: { code: "Session/DefinitionDrift" } },
    });
    const forced = await resumeRun(changed, "r3", {
      host: harness("stages: {}").host,
      store: openStore(file),
      force: true,
    });
    if (!forced.ok) throw forced.error;
    forced.value.send({ type: "CANCEL" });
    expect((await forced.value.result).status).toBe("cancelled");
  });

  it("killed before its first step was committed (its row is all there is), starts from its beginning", async () => {
    const store = openStore();
    const counter = { b: 0 };
    const pipeline = chain(5, counter);
    // What startRun stores before anything else; a crash right after leaves just this.
    store.createRun({
      runId: "r5",
      pipelineId: pipeline.id,
      definitionHash: fingerprint(pipeline).hash,
      options: { ctx: { task: "t" } },
    });
    const resumed = await resumeRun(pipeline, "r5", { host: harness("stages: {}").host, store });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
    expect(counter.b).toBe(1);
    const events = store.auditOf("r5");
    expect(events[0]).toMatchObject({
      seq: 1,
      type: "RunStarted",
      payload: { pipelineId: "chain", ctx: { task: "t" }, restart: true },
    });
    expect(events.filter((e) => e.type === "RunStarted" || e.type === "RunResumed")).toHaveLength(
      1,
    );
    expect(events.at(-1)?.type).toBe("RunCompleted");
  });

  it("killed before its first step and then cancelled, ends cancelled without starting a stage", async () => {
    const store = openStore();
    const pipeline = pipelineOf({
      id: "code-review",
      stages: [llm("plan"), llm("execute")],
      next: { plan: "execute" },
    });
    store.createRun({
      runId: "r6",
      pipelineId: pipeline.id,
      definitionHash: fingerprint(pipeline).hash,
      options: { ctx: { task: "t" } },
    });
    const h = harness(codeReviewScriptOf("plan", "execute"));
    const scripted = h.host.model.model;
    let requests = 0;
    const counted = {
      ...scripted,
      doGenerate: (options: Parameters<typeof scripted.doGenerate>[0]) => {
        requests += 1;
        return scripted.doGenerate(options);
      },
    };
    const host = { ...h.host, model: { ...h.host.model, model: counted } };
    const cancelled = await resumeRun(pipeline, "r6", {
      host,
      store,
      control: { type: "CANCEL", reason: "not wanted" },
    });
    if (!cancelled.ok) throw cancelled.error;
    const live: AuditEvent[] = [];
    for await (const event of cancelled.value.events({ deltas: false })) live.push(event);
    expect(await cancelled.value.result).toMatchObject({ runId: "r6", status: "cancelled" });
    expect(requests).toBe(0);
    const events = store.auditOf("r6");
    expect(events).toEqual(live);
    expect(events.map(({ seq, type }) => [seq, type])).toEqual([[1, "RunCancelled"]]);
    expect(events[0]?.payload).toMatchObject({ status: "cancelled", reason: "not wanted" });
    const run = store.getRun("r6");
    expect(run.ok && run.value.status).toBe("cancelled");
    expect(store.acquireLease("r6", "someone-else", 1000).ok).toBe(true);
    expect(await resumeRun(pipeline, "r6", { host, store })).toMatchObject({
      ok: false,
      error: { code: "Session/RunFinished" },
    });
  });

  it("stopped inside a sub-pipeline's parallel group, passes the snapshot check and resumes", async () => {
    const file = join(tempDir(), "runs.db");
    const nested = (ms: number, started: () => void) => {
      const inner = pipelineOf({
        id: "inner",
        stages: [
          code("fan", () => ({ verdict: "ok" })),
          waits("x", ms, "ok", started),
          waits("y", 5),
          code("join", () => ({ verdict: "ok" })),
        ],
        next: {
          fan: {
            kind: "parallel",
            siblings: ["x", "y"],
            join: "join",
            policy: { kind: "all-settled" },
          },
        },
      });
      return pipelineOf({
        id: "outer",
        stages: [
          { kind: "pipeline", id: "sub", pipeline: inner },
          code("last", () => ({ verdict: "ok" })),
        ],
        next: { sub: "last" },
      });
    };
    let running!: () => void;
    const inFlight = new Promise<void>((resolve) => {
      running = resolve;
    });
    const first = handleOf(
      await startRun(nested(5000, running), {
        host: harness("stages: {}").host,
        store: openStore(file),
        runId: "r6",
      }),
    );
    await inFlight;
    first.stop();
    expect((await first.result).status).toBe("suspended");
    const again = { x: 0 };
    const resumed = await resumeRun(
      nested(5, () => again.x++),
      "r6",
      {
        host: harness("stages: {}").host,
        store: openStore(file),
        force: true,
      },
    );
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
    expect(again.x).toBe(1);
  });

  it("stopped inside a sub-pipeline's entry, resumes it with the upstream its stage handed on", async () => {
    const file = join(tempDir(), "runs.db");
    const seen: unknown[] = [];
    const nested = (ms: number, started: () => void) =>
      pipelineOf({
        id: "outer",
        stages: [
          code("first", () => ({ verdict: "ok", output: { decision: "PROCEED" } })),
          {
            kind: "pipeline",
            id: "sub",
            pipeline: pipelineOf({
              id: "inner",
              stages: [
                code("entry", async ({ ctx, signal }) => {
                  started();
                  await new Promise((resolve) => setTimeout(resolve, ms));
                  if (signal.aborted) throw signal.reason;
                  seen.push(ctx.upstream.map((result) => result.output));
                  return { verdict: "ok" };
                }),
              ],
            }),
          },
        ],
        next: { first: "sub" },
      });
    let running!: () => void;
    const inFlight = new Promise<void>((resolve) => {
      running = resolve;
    });
    const first = handleOf(
      await startRun(nested(5000, running), {
        host: harness("stages: {}").host,
        store: openStore(file),
        runId: "r7",
      }),
    );
    await inFlight;
    first.stop();
    expect((await first.result).status).toBe("suspended");
    const resumed = await resumeRun(
      nested(5, () => undefined),
      "r7",
      { host: harness("stages: {}").host, store: openStore(file), force: true },
    );
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
    expect(seen).toEqual([[{ decision: "PROCEED" }]]);
  });

  it("a run held by a live process is Session/RunLocked", async () => {
    const file = join(tempDir(), "runs.db");
    const first = handleOf(
      await startRun(chain(5000, { b: 0 }), {
        host: harness("stages: {}").host,
        store: openStore(file),
        runId: "r4",
      }),
    );
    await waitFor(liveActor(first), (s) => s.context.current === "b");
    const second = await resumeRun(chain(5000, { b: 0 }), "r4", {
      host: harness("stages: {}").host,
      store: openStore(file),
    });
    expect(second.ok ? undefined : second.error.code).toBe("Session/RunLocked");
    first.send({ type: "CANCEL" });
    expect((await first.result).status).toBe("cancelled");
    const ended = await resumeRun(chain(5000, { b: 0 }), "r4", {
      host: harness("stages: {}").host,
      store: openStore(file),
    });
    expect(ended.ok ? undefined : ended.error.code).toBe("Session/RunFinished");
  });
});

describe("resuming a stage mid-Act", () => {
  const script = `
stages:
  plan:
    - tool: Grep
      args: { pattern: auth }
    - { error: "upstream 503" }
    - { delayMs: 1500, tool: submit_plan, args: { summary: "resumed", steps: ["a"] } }
`;
  const planOnly = () => pipelineOf({ id: "plan-only", stages: [llm("plan")] });

  it("reuses recorded replies and failures, and a fresh scripted model continues at the right entry", async () => {
    const file = join(tempDir(), "runs.db");
    const first = harness(script, { limits: { providerRetryDelayMs: 1 } });
    const calls: number[] = [];
    const spy = first.host.model.model;
    first.host.model = {
      ...first.host.model,
      model: {
        ...spy,
        doGenerate: (o) => {
          calls.push(1);
          return spy.doGenerate(o);
        },
      },
    };
    const handle = handleOf(
      await startRun(planOnly(), {
        host: first.host,
        store: openStore(file),
        runId: "r5",
        task: "t",
      }),
    );
    await vi.waitFor(() => expect(calls).toHaveLength(3));
    handle.stop();
    await handle.result;

    const second = harness(script, { limits: { providerRetryDelayMs: 1 } });
    const positions: unknown[] = [];
    const fresh = second.host.model.model;
    second.host.model = {
      ...second.host.model,
      model: {
        ...fresh,
        doGenerate: (o) => {
          positions.push(
            (o.providerOptions?.stagechart as { position?: number } | undefined)?.position,
          );
          return fresh.doGenerate(o);
        },
      },
    };
    const store = openStore(file);
    const resumed = await resumeRun(planOnly(), "r5", { host: second.host, store });
    if (!resumed.ok) throw resumed.error;
    const result = await resumed.value.result;
    expect(result).toMatchObject({ status: "done", output: { summary: "resumed" } });
    expect(positions).toEqual([2]);
    const turns = store
      .auditOf("r5")
      .filter((e) => e.type === "ModelTurn")
      .map((e) => e.payload.outcome);
    expect(turns).toEqual(["calls", "error", "completion"]);
  }, 15_000);
});

describe("a root that is not a directory", () => {
  const review = pipelineOf({
    id: "code-review",
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });
  const missingDir = () => join(tempDir(), "gone");
  const aFile = () => {
    const file = join(tempDir(), "notes.txt");
    writeFileSync(file, "not a directory");
    return file;
  };

  const selfLink = () => {
    const link = join(tempDir(), "loop");
    symlinkSync(link, link);
    return link;
  };

  it("is refused by startRun as Validation/RootInvalid naming it, and nothing is stored", async () => {
    const store = openStore();
    for (const [root, problem] of [
      [missingDir(), "does not exist"],
      [aFile(), "is not a directory"],
      [join(aFile(), "src"), "is not a directory"],
      [selfLink(), "cannot be used (ELOOP)"],
    ] as const) {
      const host = harness(CODE_REVIEW_SCRIPT, { root }).host;
      const started = await startRun(review, { host, store, task: "t" });
      expect(started).toMatchObject({
        ok: false,
        error: { code: "Validation/RootInvalid", context: { root } },
      });
      expect(!started.ok && started.error.message).toContain(`${root} ${problem}`);
    }
    expect(store.listRuns()).toEqual([]);
  });

  it("is refused by resumeRun (the root went away since), and the run stays as it was", async () => {
    const file = join(tempDir(), "runs.db");
    const gate = () => "defer" as const;
    const host = (root?: string) =>
      harness(CODE_REVIEW_SCRIPT, { hooks: { plan: { gate } }, ...(root && { root }) }).host;
    const first = handleOf(
      await startRun(review, { host: host(), store: openStore(file), runId: "gone1", task: "t" }),
    );
    expect((await first.result).status).toBe("suspended");
    const store = openStore(file);
    const before = store.auditOf("gone1");
    const root = missingDir();
    const resumed = await resumeRun(review, "gone1", { host: host(root), store });
    expect(resumed).toMatchObject({
      ok: false,
      error: { code: "Validation/RootInvalid", context: { root } },
    });
    expect(store.getRun("gone1")).toMatchObject({ ok: true, value: { status: "suspended" } });
    expect(store.auditOf("gone1")).toEqual(before);
  });
});

describe("a suspended run", () => {
  const review = pipelineOf({
    id: "code-review",
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });

  it("a deferred gate with retry-later suspends the run; resume checks the gate again", async () => {
    const file = join(tempDir(), "runs.db");
    let opens = 0;
    const gate = () => (opens++ === 0 ? ("defer" as const) : ("proceed" as const));
    const host = () => harness(CODE_REVIEW_SCRIPT, { hooks: { plan: { gate } } }).host;
    const first = handleOf(
      await startRun(review, { host: host(), store: openStore(file), runId: "g1", task: "t" }),
    );
    const parked = await first.result;
    expect(parked).toMatchObject({
      status: "suspended",
      waiting: [{ kind: "gate", stageId: "plan", stageExecutionId: "g1/plan/1" }],
    });
    const store = openStore(file);
    expect(store.getRun("g1")).toMatchObject({ ok: true, value: { status: "suspended" } });
    const resumed = await resumeRun(review, "g1", { host: host(), store });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
    expect(opens).toBe(2);
    const events = store.auditOf("g1");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === "StageExited" && e.stageId === "plan")).toHaveLength(1);
  });

  it("in a parallel group, suspends only once every other sibling has settled", async () => {
    const file = join(tempDir(), "runs.db");
    const group = pipelineOf({
      id: "group",
      stages: [waits("start", 1), llm("plan"), waits("slow", 150), waits("join", 1)],
      next: {
        start: {
          kind: "parallel",
          siblings: ["plan", "slow"],
          join: "join",
          policy: { kind: "all-settled" },
        },
      },
    });
    const h = harness(codeReviewScriptOf("plan"), { unansweredGrants: "suspend" });
    const first = handleOf(
      await startRun(group, { host: h.host, store: openStore(file), runId: "p1", task: "t" }),
    );
    const parked = await first.result;
    expect(parked.status).toBe("suspended");
    const store = openStore(file);
    const events = store.auditOf("p1");
    const slowExit = events.findIndex((e) => e.type === "StageExited" && e.stageId === "slow");
    const suspension = events.findIndex((e) => e.type === "RunSuspended");
    expect(slowExit).toBeGreaterThan(0);
    expect(suspension).toBeGreaterThan(slowExit);
    const proposalId = parked.waiting?.[0]?.kind === "grant" ? parked.waiting[0].proposalId : "";
    const resumed = await resumeRun(group, "p1", {
      host: harness(codeReviewScriptOf("plan"), { unansweredGrants: "suspend" }).host,
      store,
      answers: [{ proposalId, decision: "deny" }],
    });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
  });
});

describe("snapshot size", () => {
  it("stays flat over a 200-turn stage: the conversation lives in the journal, not the snapshot", async () => {
    const turns = 200;
    const script = `stages:\n  plan:\n${"    - { tool: Read, args: { path: src/auth.ts } }\n".repeat(turns)}    - { tool: submit_plan, args: { summary: s, steps: [a] } }\n`;
    const plan = llm("plan", (text) => text.replace(/^turnCap: .*$/m, `turnCap: ${turns + 1}`));
    const pipeline = pipelineOf({ id: "long", stages: [plan] });
    const store = openStore();
    const sizes: number[] = [];
    const measured = Object.assign(Object.create(store), {
      commitStep: (runId: string, step: Parameters<SqliteStore["commitStep"]>[1]) => {
        if (step.snapshot) sizes.push(JSON.stringify(step.snapshot).length);
        return store.commitStep(runId, step);
      },
    }) as SqliteStore;
    const handle = handleOf(
      await startRun(pipeline, {
        host: harness(script).host,
        store: measured,
        runId: "long",
        task: "t",
      }),
    );
    expect((await handle.result).status).toBe("done");
    expect(store.read("long/plan/1").length).toBeGreaterThan(2 * turns);
    // An early turn's two steps (its model reply, its tool result): the larger snapshot of the two.
    const early = Math.max(sizes[10] as number, sizes[11] as number);
    // Every later turn's, up to the last (the two steps after it are Assert's and the run's end;
    // Setup's actor carries the stage definition, as Assert's does).
    const largest = Math.max(...sizes.slice(10, -2));
    expect(sizes.length).toBeGreaterThan(turns);
    expect(largest).toBeLessThan(early * 1.2);
  });
});

describe("a long durable stage", () => {
  it("reads its transcript and journal from the store once, however many turns it takes, and once more on resume", async () => {
    const half = 20;
    const turns = 2 * half + 1;
    const read = "    - { tool: Read, args: { path: src/auth.ts } }\n";
    // The call after the first half is slow, so the run can be stopped while it is in flight.
    const slow = "    - { tool: Read, args: { path: src/auth.ts }, delayMs: 300 }\n";
    const script = `stages:\n  plan:\n${read.repeat(half)}${slow}${read.repeat(half)}    - { tool: submit_plan, args: { summary: s, steps: [a] } }\n`;
    const plan = llm("plan", (text) => text.replace(/^turnCap: .*$/m, `turnCap: ${turns + 1}`));
    const pipeline = pipelineOf({ id: "long", stages: [plan] });
    const store = openStore();
    const reads: string[] = [];
    const counted = Object.assign(Object.create(store), {
      read: (stageExecutionId: string, before?: string) => {
        reads.push(`read ${stageExecutionId}`);
        return store.read(stageExecutionId, before);
      },
      transcriptRows: (stageExecutionId: string) => {
        reads.push(`transcriptRows ${stageExecutionId}`);
        return store.transcriptRows(stageExecutionId);
      },
      get: (key: string, shape: Parameters<SqliteStore["get"]>[1]) => {
        reads.push(`get ${key}`);
        return store.get(key, shape);
      },
      entriesOf: (runId: string) => {
        reads.push(`entriesOf ${runId}`);
        return store.entriesOf(runId);
      },
    }) as SqliteStore;
    const { host } = harness(script);
    const handle = handleOf(
      await startRun(pipeline, { host, store: counted, runId: "long", task: "t" }),
    );
    await vi.waitFor(() => expect(store.read("long/plan/1").length).toBeGreaterThan(2 * half));
    handle.stop();
    expect((await handle.result).status).toBe("suspended");
    // One read of the run's entries, when its first call looked for a recorded result.
    expect(reads).toEqual(["entriesOf long"]);
    reads.length = 0;
    const resumed = handleOf(await resumeRun(pipeline, "long", { host, store: counted }));
    expect((await resumed.result).status).toBe("done");
    expect(reads).toEqual(["entriesOf long"]);
    expect(store.read("long/plan/1").length).toBeGreaterThan(2 * turns);
  });
});

describe("a durable step", () => {
  it("is one transaction: its journal and transcript entries are written inside its commit, never apart", async () => {
    const store = openStore();
    const writesOutside: string[] = [];
    const writes: string[] = [];
    const watched: SqliteStore = Object.assign(Object.create(store), {
      commitStep(this: SqliteStore, runId: string, step: Parameters<SqliteStore["commitStep"]>[1]) {
        for (const { key } of step.journal ?? []) writes.push(key);
        for (const { stageExecutionId, key } of step.transcripts ?? [])
          writes.push(`${stageExecutionId} ${key}`);
        return SqliteStore.prototype.commitStep.call(this, runId, step);
      },
      record: (key: string, value: unknown) => {
        writesOutside.push(key);
        store.record(key, value);
      },
      put: (id: string, key: string, entry: Parameters<SqliteStore["put"]>[2]) => {
        writesOutside.push(`${id} ${key}`);
        store.put(id, key, entry);
      },
    });
    const handle = handleOf(
      await startRun(pipelineOf({ id: "one", stages: [llm("plan")] }), {
        host: harness(codeReviewScriptOf("plan")).host,
        store: watched,
        runId: "one",
        task: "t",
      }),
    );
    expect((await handle.result).status).toBe("done");
    expect(writesOutside).toEqual([]);
    expect(writes.filter((key) => key.startsWith("model:"))).not.toHaveLength(0);
    expect(writes.filter((key) => key.startsWith("one/plan/1 "))).not.toHaveLength(0);
  });
});

describe("resuming a run parked on a grant", () => {
  it("asks the resumed host's interactors, when it has some, instead of suspending again", async () => {
    const file = join(tempDir(), "runs.db");
    const pipeline = pipelineOf({
      id: "code-review",
      stages: [llm("plan"), llm("execute"), llm("review")],
      next: { plan: "execute", execute: "review" },
    });
    const headless = harness(CODE_REVIEW_SCRIPT, { unansweredGrants: "suspend" }).host;
    const first = handleOf(
      await startRun(pipeline, { host: headless, store: openStore(file), runId: "q1", task: "t" }),
    );
    expect((await first.result).status).toBe("suspended");

    const asked: string[] = [];
    const attended = harness(CODE_REVIEW_SCRIPT, {
      unansweredGrants: "suspend",
      interactors: [
        callbackInteractor("ui", (request) => {
          asked.push(request.proposalId);
          return "approve";
        }),
      ],
    }).host;
    const store = openStore(file);
    const resumed = await resumeRun(pipeline, "q1", { host: attended, store });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
    expect(asked).toEqual(["q1/plan/1/a1/t1/c0"]);
    const events = store.auditOf("q1");
    expect(events.filter((e) => e.type === "GrantRequested")).toHaveLength(1);
    expect(events.find((e) => e.type === "GrantIssued")?.payload).toMatchObject({
      source: "interactor",
    });
  });
});

describe("a run stopped while a grant request was being asked", () => {
  const pipeline = pipelineOf({
    id: "code-review",
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });

  async function stoppedWhileAsking(file: string): Promise<string> {
    const neverAnswers = callbackInteractor(
      "away",
      (_, signal) => new Promise((_, reject) => signal.addEventListener("abort", reject)),
    );
    const host = harness(CODE_REVIEW_SCRIPT, { interactors: [neverAnswers] }).host;
    const first = handleOf(
      await startRun(pipeline, { host, store: openStore(file), runId: "a1", task: "t" }),
    );
    for await (const event of first.events()) {
      if (event.type === "GrantRequested") {
        first.stop();
        await first.result; // the stopped run gives its lease back as it settles
        return String(event.payload.proposalId);
      }
    }
    throw new Error("no grant request");
  }

  it("keeps the request: a headless resume suspends on it instead of denying it", async () => {
    const file = join(tempDir(), "runs.db");
    const proposalId = await stoppedWhileAsking(file);
    const store = openStore(file);
    const headless = harness(CODE_REVIEW_SCRIPT, { unansweredGrants: "suspend" }).host;
    const resumed = await resumeRun(pipeline, "a1", { host: headless, store });
    if (!resumed.ok) throw resumed.error;
    const result = await resumed.value.result;
    expect(result).toMatchObject({ status: "suspended", waiting: [{ kind: "grant", proposalId }] });
    expect(store.auditOf("a1").some((e) => e.type === "ToolDenied")).toBe(false);
  });

  it("takes an answer to it on resume", async () => {
    const file = join(tempDir(), "runs.db");
    const proposalId = await stoppedWhileAsking(file);
    const store = openStore(file);
    const resumed = await resumeRun(pipeline, "a1", {
      host: harness(CODE_REVIEW_SCRIPT).host,
      store,
      answers: [{ proposalId, decision: "approve" }],
    });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
    expect(store.auditOf("a1").find((e) => e.type === "GrantIssued")?.payload).toMatchObject({
      proposalId,
    });
  });
});

describe("a durable run that can no longer write", () => {
  it("stops once another owner took its lease, leaving the run and the lease to that owner", async () => {
    const store = openStore();
    const handle = handleOf(
      await startRun(chain(5000, { b: 0 }), {
        host: harness("stages: {}").host,
        store,
        runId: "stolen",
        leaseTtlMs: 90,
      }),
    );
    await waitFor(liveActor(handle), (s) => s.context.current === "b");
    expect(store.acquireLease("stolen", "thief", 60_000, () => true).ok).toBe(true);
    const result = await handle.result;
    expect(result).toMatchObject({ status: "suspended", error: { code: "Session/LeaseLost" } });
    expect(store.getRun("stolen")).toMatchObject({ ok: true, value: { status: "running" } });
    expect(store.renewLease("stolen", "thief", 60_000).ok).toBe(true);
  });

  it("stops with the store's error when a step cannot be committed, and throws nothing", async () => {
    const store = openStore();
    let commits = 0;
    const failing = Object.assign(Object.create(store), {
      commitStep: (runId: string, step: Parameters<SqliteStore["commitStep"]>[1]) => {
        commits += 1;
        if (commits > 3) throw new Error("disk I/O error");
        return store.commitStep(runId, step);
      },
    }) as SqliteStore;
    const handle = handleOf(
      await startRun(chain(50, { b: 0 }), {
        host: harness("stages: {}").host,
        store: failing,
        runId: "full",
      }),
    );
    const result = await handle.result;
    expect(result.error).toMatchObject({
      code: "Session/StoreUnavailable",
      message: "disk I/O error",
    });
    const stored = store.auditOf("full");
    expect(stored.map((e) => e.seq)).toEqual(stored.map((_, k) => k + 1));
    expect(stored.some((e) => e.type === "RunCompleted")).toBe(false);
    expect(store.getRun("full")).toMatchObject({ ok: true, value: { status: "running" } });
  });
});

describe("a durable run on a disk that fills up", () => {
  const review = pipelineOf({
    id: "code-review",
    stages: [llm("plan"), llm("execute"), llm("review")],
    next: { plan: "execute", execute: "review" },
  });

  it("stops with Session/StoreUnavailable wherever the disk fills, fails no stage for it, and resumes to done once there is room", async () => {
    const stoppedAt = new Set<number>();
    // Each run gets a few more pages than the last, so the disk fills at a later write each time.
    for (let spare = 0; spare < 40; spare += 2) {
      const store = openStore();
      const runId = `full-${spare}`;
      const freeSpace = fillDisk(store, spare);
      const started = await startRun(review, {
        host: harness(CODE_REVIEW_SCRIPT).host,
        store,
        runId,
        task: "t",
      });
      if (!started.ok) {
        expect(started.error.code).toBe("Session/StoreUnavailable");
        continue;
      }
      const first = await started.value.result;
      if (first.status !== "done") {
        expect(first).toMatchObject({
          status: "suspended",
          error: { code: "Session/StoreUnavailable", message: expect.stringContaining("full") },
        });
        stoppedAt.add(store.lastSeq(runId));
        expect(store.getRun(runId)).toMatchObject({ ok: true, value: { status: "running" } });
        freeSpace();
        const resumed = await resumeRun(review, runId, {
          host: harness(CODE_REVIEW_SCRIPT).host,
          store,
        });
        if (!resumed.ok) throw resumed.error;
        expect((await resumed.value.result).status).toBe("done");
      }
      const events = store.auditOf(runId);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const exits = events.filter((e) => e.type === "StageExited");
      expect(exits.map((e) => e.stageId)).toEqual(["plan", "execute", "review"]);
      expect(exits.every((e) => e.payload.verdict === "ok")).toBe(true);
      store.close();
    }
    // The disk filled at many different points of the run, not just one.
    expect(stoppedAt.size).toBeGreaterThan(3);
  });

  it.each([
    ["a tool result's journal entry", "record", (key: string) => key.startsWith("tool:")],
    [
      "a transcript entry (written by a machine action)",
      "put",
      (id: string) => id.endsWith("/execute/1"),
    ],
  ] as const)(
    "stops when only the write of %s fails (the disk full just then): no call is failed for it",
    async (_, method, fails) => {
      const store = openStore();
      let failing = true;
      // The entry is written with the step that carries it: that step's commit fails.
      const carried = (step: StepCommit) =>
        method === "record"
          ? (step.journal ?? []).some(({ key }) => fails(key))
          : (step.transcripts ?? []).some(({ stageExecutionId }) => fails(stageExecutionId));
      const fullOnce = Object.assign(Object.create(store), {
        commitStep: (runId: string, step: StepCommit) => {
          if (carried(step) && failing) {
            failing = false;
            throw new StagechartError("Session/StoreUnavailable", "database or disk is full");
          }
          return store.commitStep(runId, step);
        },
      }) as SqliteStore;
      const host = () => harness(CODE_REVIEW_SCRIPT, { unansweredGrants: "suspend" }).host;
      const first = handleOf(
        await startRun(review, { host: host(), store: fullOnce, runId: "j1", task: "t" }),
      );
      const parked = await first.result;
      const proposalId = parked.waiting?.[0]?.kind === "grant" ? parked.waiting[0].proposalId : "";
      const answered = await resumeRun(review, "j1", {
        host: host(),
        store: fullOnce,
        answers: [{ proposalId, decision: "approve" }],
      });
      if (!answered.ok) throw answered.error;
      expect(await answered.value.result).toMatchObject({
        status: "suspended",
        error: { code: "Session/StoreUnavailable" },
      });
      expect(store.auditOf("j1").some((e) => e.type === "ToolFailed")).toBe(false);

      // What was in flight when the write failed runs again; everything recorded is reused.
      const resumed = await resumeRun(review, "j1", { host: host(), store });
      if (!resumed.ok) throw resumed.error;
      expect((await resumed.value.result).status).toBe("done");
      expect(store.auditOf("j1").filter((e) => e.type === "ToolSucceeded")).not.toHaveLength(0);
    },
  );
});
