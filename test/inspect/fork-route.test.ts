import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { demoProject, runCli, storeOf, summaryOf } from "../support/cli.js";
import { openStore } from "../support/live-runs.js";

/** A stored, finished run of code-review-parallel on a fresh project: its store and id. */
async function finishedRun(): Promise<{ storePath: string; runId: string }> {
  const project = demoProject();
  const storePath = storeOf(project);
  const done = await runCli(
    "run",
    "code-review-parallel",
    "--task",
    "rename auth to authentication",
    "--root",
    project,
    "--store",
    storePath,
    "--headless",
    "--json",
  );
  const { runId, status } = summaryOf(done.stdout);
  expect(status).toBe("done");
  return { storePath, runId };
}

type Reply = { error: { code: string; message: string } } & Record<string, unknown>;
type Snapshot = { value: unknown; context: { ctx: Record<string, unknown> } };

const runIdsOf = (storePath: string): string[] => {
  const store = openStore(storePath);
  try {
    return store.listRuns({ limit: 100 }).map((r) => r.runId);
  } finally {
    store.close();
  }
};

describe("POST /api/v1/runs/<runId>/fork: time travel from the page", () => {
  let stored: { storePath: string; runId: string };
  let server: InspectServer | undefined;
  beforeAll(async () => {
    stored = await finishedRun();
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  const post = async (runId: string, body: unknown, headers: Record<string, string> = {}) => {
    const reply = await fetch(`http://127.0.0.1:${server?.port}/api/v1/runs/${runId}/fork`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    return { status: reply.status, json: async () => (await reply.json()) as Reply };
  };

  it("stores a new run from the step with the ctx changed, starts it, and names it", async () => {
    server = await startInspectServer({ ...stored, port: 0, resumeRuns: true });
    const reply = await post(stored.runId, {
      at: 3,
      set: { task: "rename auth to authn" },
      runId: "forked-1",
    });
    expect(reply.status).toBe(200);
    expect(await reply.json()).toEqual({
      runId: "forked-1",
      from: { runId: stored.runId, step: 3 },
      outcome: "started",
    });

    const store = openStore(stored.storePath);
    try {
      await expect
        .poll(() => store.getRun("forked-1"), { timeout: 20_000 })
        .toMatchObject({ ok: true, value: { status: "done" } });
      // Its history starts from that step of the source: the source's snapshot, ctx changed.
      const [opening] = store.auditOf("forked-1");
      expect(opening).toMatchObject({
        type: "RunForked",
        payload: { from: { runId: stored.runId, step: 3 }, set: { task: "rename auth to authn" } },
      });
      const first = store.snapshotAtStep("forked-1", 1) as Snapshot;
      const source = store.snapshotAtStep(stored.runId, 3) as Snapshot;
      expect(first.value).toEqual(source.value);
      expect(first.context.ctx).toEqual({ ...source.context.ctx, task: "rename auth to authn" });
      // The source is as it was.
      expect(store.auditOf(stored.runId).some((e) => e.type === "RunForked")).toBe(false);
    } finally {
      store.close();
    }
  });

  it("refuses a step the run does not have, a ctx edit its schema refuses, an unknown run and a malformed request, storing nothing", async () => {
    server = await startInspectServer({ ...stored, port: 0, resumeRuns: true });
    const before = runIdsOf(stored.storePath);
    const refusals = [
      [stored.runId, { at: 999 }, 400, "Validation/ForkStepUnknown"],
      [stored.runId, { at: 2, set: { task: 5 } }, 400, "Validation/RunContextInvalid"],
      ["no-such-run", { at: 2 }, 404, "Session/RunNotFound"],
      [stored.runId, { at: "two" }, 400, "Validation/RequestBodyInvalid"],
      [stored.runId, { at: 2, set: ["task=x"] }, 400, "Validation/RequestBodyInvalid"],
    ] as const;
    for (const [runId, body, status, code] of refusals) {
      const reply = await post(runId, body);
      expect([reply.status, (await reply.json()).error.code]).toEqual([status, code]);
    }
    expect(runIdsOf(stored.storePath)).toEqual(before);
  });

  it("is refused by a server that does not run runs, which says so on its health", async () => {
    server = await startInspectServer({ ...stored, port: 0 });
    const health = await (await fetch(`http://127.0.0.1:${server.port}/api/v1/health`)).json();
    expect(health).toEqual({ store: true, startsRuns: false });
    const before = runIdsOf(stored.storePath);

    const reply = await post(stored.runId, { at: 2 });

    expect(reply.status).toBe(409);
    expect((await reply.json()).error).toMatchObject({
      code: "Session/ForkNotServed",
      message: expect.stringContaining(`stagechart fork ${stored.runId} --at 2`),
    });
    expect(runIdsOf(stored.storePath)).toEqual(before);
  });

  it("is refused to another site's page, as every request of the API is", async () => {
    server = await startInspectServer({ ...stored, port: 0, resumeRuns: true });
    const before = runIdsOf(stored.storePath);

    const reply = await post(stored.runId, { at: 2 }, { origin: "http://evil.example" });

    expect(reply.status).toBe(403);
    expect((await reply.json()).error.code).toBe("Validation/InspectForbidden");
    expect(runIdsOf(stored.storePath)).toEqual(before);
  });
});
