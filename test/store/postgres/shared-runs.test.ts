import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { waitFor } from "xstate";
import type { AuditEvent } from "../../../src/events/audit.js";
import { parseScript } from "../../../src/models/script-file.js";
import { createScriptedModel } from "../../../src/models/scripted.js";
import { requestControl } from "../../../src/runtime/live-control.js";
import { resumeRun, startRun } from "../../../src/runtime/run.js";
import { SqliteStore } from "../../../src/store/index.js";
import { liveActor } from "../../runtime/support/live-actor.js";
import { slowPipeline } from "../../support/live-runs.js";
import { code, pipelineOf } from "../../support/pipelines.js";
import { harness, modelHarness } from "../../support/stage-harness.js";
import { tempDir } from "../../support/stages.js";
import {
  bundledCodeReview,
  codeReviewScript,
  noPostgres,
  sharedStores,
} from "./support/shared-store.js";

const stores = sharedStores();
const task = "refactor auth module";

/** What tells two audit logs apart in shape: each event's type and stage, in order. */
const shapeOf = (events: AuditEvent[]) =>
  events.map((event) => `${event.type}${event.stageId ? `@${event.stageId}` : ""}`);

describe.skipIf(noPostgres)("a durable run on the shared PostgreSQL store", () => {
  it("runs the bundled code-review pipeline to done, its audit log shaped as on SQLite", async () => {
    const pipeline = await bundledCodeReview();
    const onSqlite = SqliteStore.open(join(tempDir(), "runs.db"));
    if (!onSqlite.ok) throw onSqlite.error;
    const local = await startRun(pipeline, {
      host: harness(codeReviewScript()).host,
      store: onSqlite.value,
      runId: "review-1",
      task,
    });
    if (!local.ok) throw local.error;
    expect((await local.value.result).status).toBe("done");

    const { store } = await stores.fresh();
    const shared = await startRun(pipeline, {
      host: harness(codeReviewScript()).host,
      store,
      runId: "review-1",
      task,
    });
    if (!shared.ok) throw shared.error;
    const result = await shared.value.result;
    expect(result.status).toBe("done");

    const stored = await store.auditOf("review-1");
    expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index + 1));
    expect(shapeOf(stored)).toEqual(shapeOf(onSqlite.value.auditOf("review-1")));
    expect(stored.at(-1)?.type).toBe("RunCompleted");
    const run = await store.getRun("review-1");
    expect(run.ok && run.value.status).toBe("done");
    expect(await store.leaseHolder("review-1")).toBeUndefined();
    onSqlite.value.close();
  });

  it("does not resume a run its last owner ended between the resume's first read and its lease", async () => {
    const { store } = await stores.fresh();
    const pipeline = await bundledCodeReview();
    const first = await startRun(pipeline, {
      host: harness(codeReviewScript()).host,
      store,
      runId: "review-9",
      task,
    });
    if (!first.ok) throw first.error;
    expect((await first.value.result).status).toBe("done");
    const logged = (await store.auditOf("review-9")).length;

    // The resume reads the row as it was while the run still ran; the lease comes after its end.
    let reads = 0;
    const stale = new Proxy(store, {
      get(target, name, receiver) {
        if (name !== "getRun") return Reflect.get(target, name, receiver).bind(target);
        return async (runId: string) => {
          const row = await target.getRun(runId);
          reads += 1;
          return reads === 1 && row.ok
            ? { ...row, value: { ...row.value, status: "running" } }
            : row;
        };
      },
    });
    const resumed = await resumeRun(pipeline, "review-9", {
      host: harness(codeReviewScript()).host,
      store: stale,
    });
    expect(resumed.ok).toBe(false);
    if (!resumed.ok) expect(resumed.error.code).toBe("Session/RunFinished");
    expect(await store.auditOf("review-9")).toHaveLength(logged);
    expect(await store.leaseHolder("review-9")).toBeUndefined();
  });

  it("makes no model call before every step that led to it is stored", async () => {
    const { store } = await stores.fresh();
    const parsed = parseScript(codeReviewScript(), "code-review.script.yaml");
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
    const scripted = createScriptedModel(parsed.value);
    const asked: string[] = [];
    const unstoredAtCall: string[][] = [];
    const model = {
      ...scripted,
      model: {
        ...scripted.model,
        doGenerate: async (options: Parameters<typeof scripted.model.doGenerate>[0]) => {
          const stored = new Set((await store.journalOf("review-2")).map((row) => row.key));
          unstoredAtCall.push(asked.filter((key) => !stored.has(key)));
          const call = options.providerOptions?.stagechart as Record<string, unknown>;
          asked.push(`model:review-2/${call.stageExecutionId}/${call.position}`);
          return scripted.model.doGenerate(options);
        },
      },
    };
    const shared = await startRun(await bundledCodeReview(), {
      host: modelHarness(model as typeof scripted).host,
      store,
      runId: "review-2",
      task,
    });
    if (!shared.ok) throw shared.error;
    expect((await shared.value.result).status).toBe("done");
    expect(asked.length).toBeGreaterThan(3);
    expect(unstoredAtCall).toEqual(asked.map(() => []));
  });

  it("stops with Session/StoreUnavailable when a step cannot be written, losing nothing stored, and resumes to done", async () => {
    const { url, store } = await stores.fresh();
    const pipeline = await bundledCodeReview();
    // The disk fills up under the run: from its 11th event on, no step can be written.
    await sql(
      url,
      `CREATE FUNCTION disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN IF NEW.last_seq > 10 THEN RAISE EXCEPTION 'no space left' USING ERRCODE = '53100'; END IF;
       RETURN NEW; END $$;
       CREATE TRIGGER disk_full BEFORE INSERT ON steps FOR EACH ROW EXECUTE FUNCTION disk_full();`,
    );
    const started = await startRun(pipeline, {
      host: harness(codeReviewScript()).host,
      store,
      runId: "review-3",
      task,
    });
    if (!started.ok) throw started.error;
    const live: AuditEvent[] = [];
    for await (const event of started.value.events({ deltas: false })) live.push(event);
    const result = await started.value.result;
    expect(result.status).toBe("suspended");
    expect(result.error?.code).toBe("Session/StoreUnavailable");

    const stored = await store.auditOf("review-3");
    // The steps before the one that failed, whole: a step is stored with all its events or not at all.
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.length).toBeLessThanOrEqual(10);
    expect(stored.map((event) => event.seq)).toEqual(stored.map((_, index) => index + 1));
    expect(shapeOf(stored)).toEqual(shapeOf(live.slice(0, stored.length)));
    const run = await store.getRun("review-3");
    expect(run.ok && run.value.status).toBe("running");
    expect(await store.leaseHolder("review-3")).toBeUndefined();

    await sql(url, "DROP TRIGGER disk_full ON steps");
    const resumed = await resumeRun(pipeline, "review-3", {
      host: harness(codeReviewScript()).host,
      store,
    });
    if (!resumed.ok) throw resumed.error;
    expect((await resumed.value.result).status).toBe("done");
    const all = await store.auditOf("review-3");
    expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index + 1));
    expect(all.slice(0, stored.length)).toEqual(stored);
  });

  it("stops with Session/LeaseLost once another process took its lease, writing nothing more", async () => {
    const { url, store } = await stores.fresh();
    const started = await startRun(slowPipeline(), {
      host: harness("stages: {}").host,
      store,
      runId: "slow-2",
      leaseTtlMs: 600,
    });
    if (!started.ok) throw started.error;
    await waitFor(liveActor(started.value), (s) => s.context.current === "draft");
    await sql(url, "UPDATE leases SET owner = 'another-worker' WHERE run_id = 'slow-2'");

    const live: AuditEvent[] = [];
    for await (const event of started.value.events({ deltas: false })) live.push(event);
    const result = await started.value.result;
    expect(result.status).toBe("suspended");
    expect(result.error?.code).toBe("Session/LeaseLost");
    // What it noticed the loss with (its suspension) is not written: the run is not its any more.
    expect(live.at(-1)?.type).toBe("RunSuspended");
    const stored = await store.auditOf("slow-2");
    expect(stored.length).toBeLessThan(live.length);
    expect(stored).toEqual(live.slice(0, stored.length));
    expect((await store.leaseHolder("slow-2"))?.owner).toBe("another-worker");
  });

  it("rides out a renewal the store fails to answer, while its lease cannot have expired", async () => {
    const { store } = await stores.fresh();
    let renewals = 0;
    const flaky = new Proxy(store, {
      get(target, name, receiver) {
        // The run is owned over this view (`ownRun` opens it on `this`), so that its renewals pass here.
        if (name === "ownRun") return Reflect.get(target, name, receiver).bind(receiver);
        if (name !== "renewLease") return Reflect.get(target, name, receiver).bind(target);
        return (...args: Parameters<typeof store.renewLease>) => {
          renewals += 1;
          if (renewals === 1) return Promise.reject(new Error("connection reset by peer"));
          return target.renewLease(...args);
        };
      },
    });
    const started = await startRun(slowPipeline(), {
      host: harness("stages: {}").host,
      store: flaky,
      runId: "slow-4",
      leaseTtlMs: 600,
    });
    if (!started.ok) throw started.error;
    const actor = liveActor(started.value);
    await waitFor(actor, (s) => s.context.current === "draft");
    while (renewals < 4) await new Promise((resolve) => setTimeout(resolve, 50));

    expect(actor.getSnapshot().status).toBe("active");
    const holder = await store.leaseHolder("slow-4");
    expect(holder?.expiresAt).toBeGreaterThan(Date.now());
    actor.send({ type: "CANCEL" });
    expect((await started.value.result).status).toBe("cancelled");
  });

  it("gives its code stages the store's pipeline memory, kept from one run to the next", async () => {
    const { store } = await stores.fresh();
    const counting = pipelineOf({
      id: "counting",
      stages: [
        code("count", async ({ memory }) => {
          const before = ((await memory.recall("counting", "runs")) as number | undefined) ?? 0;
          await memory.remember("counting", "runs", before + 1);
          const recent = (await memory.recent("counting", 5)).map((entry) => entry.value);
          return { verdict: "ok", output: { before, recent } };
        }),
      ],
    });
    const outputs = [];
    for (const runId of ["count-1", "count-2"]) {
      const started = await startRun(counting, {
        host: harness("stages: {}").host,
        store,
        runId,
      });
      if (!started.ok) throw started.error;
      outputs.push((await started.value.result).output);
    }
    expect(outputs).toMatchObject([
      { before: 0, recent: [1] },
      { before: 1, recent: [2] },
    ]);
    expect(await store.recall("counting", "runs")).toBe(2);
  });

  it("runs a code stage that calls tools one after another, each after what came before is stored", async () => {
    const { store } = await stores.fresh();
    const reads = pipelineOf({
      id: "reads",
      stages: [
        code("read-twice", async ({ callTool }) => {
          const first = await callTool("Read", { path: "src/auth.ts" });
          const second = await callTool("Read", { path: "src/auth.ts" });
          return { verdict: first.ok && second.ok ? "ok" : "fail" };
        }),
      ],
    });
    const started = await startRun(reads, {
      host: harness("stages: {}", { mode: "yolo" }).host,
      store,
      runId: "reads-1",
    });
    if (!started.ok) throw started.error;
    expect((await started.value.result).status).toBe("done");
    const types = (await store.auditOf("reads-1")).map((event) => event.type);
    expect(types.filter((type) => type === "ToolSucceeded")).toHaveLength(2);
  });

  it("takes a cancel requested from another process while the run is live", async () => {
    const { url, store } = await stores.fresh();
    const started = await startRun(slowPipeline(), {
      host: harness("stages: {}").host,
      store,
      runId: "slow-1",
    });
    if (!started.ok) throw started.error;
    await waitFor(liveActor(started.value), (s) => s.context.current === "draft");

    const elsewhere = await stores.reopen(url);
    const cancel = { type: "CANCEL" as const, reason: "not needed" };
    const asked = await requestControl(elsewhere, "slow-1", cancel, { by: "ops" });
    expect(asked.ok).toBe(true);
    expect((await started.value.result).status).toBe("cancelled");
    const run = await store.getRun("slow-1");
    expect(run.ok && run.value.status).toBe("cancelled");
    const types = (await store.auditOf("slow-1")).map((event) => event.type);
    expect(types).toContain("ControlRequested");
    expect(types.at(-1)).toBe("RunCancelled");
  });
});

/** Runs SQL on the database behind the store's back. */
async function sql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
