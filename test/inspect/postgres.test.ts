import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { waitFor } from "xstate";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { startRun } from "../../src/runtime/run.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { liveActor } from "../runtime/support/live-actor.js";
import { demoProject, runCli, runIn, storeOf, summaryOf } from "../support/cli.js";
import { slowPipeline } from "../support/live-runs.js";
import { PIPELINE, project } from "../support/pipeline-files.js";
import { noPostgres, testPostgres } from "../support/postgres.js";
import { harness } from "../support/stage-harness.js";
import { tempDir } from "../support/stages.js";
import { queueRuns, startWorker } from "../support/worker-fleet.js";

const postgres = testPostgres();
const TASK = ["--task", "rename auth to authentication"];

const servers: InspectServer[] = [];
const stores: PostgresStore[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const store of stores.splice(0)) await store.close();
});

async function openPostgres(url: string): Promise<PostgresStore> {
  const opened = await PostgresStore.open(url);
  if (!opened.ok) throw opened.error;
  stores.push(opened.value);
  return opened.value;
}

async function serve(options: Parameters<typeof startInspectServer>[0]) {
  const server = await startInspectServer({ port: 0, ...options });
  servers.push(server);
  return async (path: string) => {
    const reply = await fetch(`http://127.0.0.1:${server.port}${path}`);
    return { status: reply.status, text: await reply.text() };
  };
}

/**
 * A reply with what differs between two runs of the same spec taken out: the run's id, its
 * project's folder, and the clock (timestamps and durations).
 */
function comparable(text: string, run: { runId: string; root: string }): unknown {
  const clock = new Set(["at", "createdAt", "updatedAt", "durationMs", "startedAt", "endedAt"]);
  return JSON.parse(text.replaceAll(run.runId, "RUN").replaceAll(run.root, "ROOT"), (key, value) =>
    clock.has(key) ? "(time)" : value,
  );
}

describe.skipIf(noPostgres)("the inspect server on a PostgreSQL store", () => {
  it("serves a run's view, audit, steps, step views and graph as it does from SQLite", async () => {
    const project = demoProject();
    const ranLocally = await runIn(project, "run", "code-review", ...TASK, "--json");
    const local = { runId: summaryOf(ranLocally.stdout).runId, root: project };
    const url = await postgres().createDatabase();
    const elsewhere = demoProject();
    const ranShared = await runCli(
      ...["run", "code-review", ...TASK, "--json", "--root", elsewhere, "--store", url],
    );
    expect(ranShared.code).toBe(0);
    const shared = { runId: summaryOf(ranShared.stdout).runId, root: elsewhere };

    const fromSqlite = await serve({ storePath: storeOf(project) });
    const fromPostgres = await serve({ store: await openPostgres(url) });
    const steps = JSON.parse((await fromPostgres(`/api/v1/runs/${shared.runId}/steps`)).text);
    expect(steps.length).toBeGreaterThan(3);
    const routes = [
      "",
      "/audit",
      "/steps",
      "/steps/1",
      `/steps/${steps.length}`,
      "/graph",
      "/steps/9999",
    ];
    for (const route of routes) {
      const [onSqlite, onPostgres] = [
        await fromSqlite(`/api/v1/runs/${local.runId}${route}`),
        await fromPostgres(`/api/v1/runs/${shared.runId}${route}`),
      ];
      expect({ route, status: onPostgres.status }).toEqual({ route, status: onSqlite.status });
      expect(comparable(onPostgres.text, shared)).toEqual(comparable(onSqlite.text, local));
    }
    const runs = JSON.parse((await fromPostgres("/api/v1/runs")).text) as { runId: string }[];
    expect(runs.map((run) => run.runId)).toEqual([shared.runId]);
    expect(JSON.parse((await fromPostgres("/api/v1/health")).text)).toEqual({
      store: true,
      startsRuns: false,
    });
  });

  it("draws a run queued on another machine from the definition stored with it, its files not here", async () => {
    const url = await postgres().createDatabase();
    const elsewhere = project({ "machines/p.yaml": PIPELINE });
    const queued = await runCli(
      ...["run", join(elsewhere, "machines/p.yaml"), "--task", "t", "--detach", "--store", url],
    );
    expect(queued.code).toBe(0);
    rmSync(elsewhere, { recursive: true });
    const cache = process.env.XDG_CACHE_HOME;
    process.env.XDG_CACHE_HOME = tempDir();
    try {
      const api = await serve({ store: await openPostgres(url) });
      const graph = await api(`/api/v1/runs/${queued.stdout.trim()}/graph`);
      expect(graph.status).toBe(200);
      const { pipeline } = JSON.parse(graph.text) as {
        pipeline: { root: { children: { id: string }[] } };
      };
      expect(pipeline.root.children.map((state) => state.id)).toEqual(
        expect.arrayContaining(["small.plan", "small.execute", "small.review"]),
      );
    } finally {
      if (cache === undefined) delete process.env.XDG_CACHE_HOME;
      else process.env.XDG_CACHE_HOME = cache;
    }
  });

  it("streams a live run another store handle owns to the page watching it, and cancels it from the page", async () => {
    const url = await postgres().createDatabase();
    const owner = await startRun(slowPipeline(), {
      host: harness("stages: {}").host,
      store: await openPostgres(url),
      runId: "far-1",
    });
    if (!owner.ok) throw owner.error;
    await waitFor(liveActor(owner.value), (s) => s.context.current === "draft");

    const server = await startInspectServer({ store: await openPostgres(url), port: 0 });
    servers.push(server);
    const page = new WebSocket(`ws://127.0.0.1:${server.port}/ws/page`);
    const news: { type: string; runs?: { runId: string }[]; events?: { type: string }[] }[] = [];
    page.on("message", (data) => news.push(JSON.parse(data.toString())));
    const arrived = (wanted: (n: (typeof news)[number]) => boolean) =>
      new Promise<void>((resolve) => {
        const check = () => (news.some(wanted) ? resolve() : setTimeout(check, 5));
        check();
      });
    await new Promise((resolve) => page.once("open", resolve));
    page.send(JSON.stringify({ type: "watch", runId: "far-1", after: 0 }));
    await arrived((n) => n.type === "runs" && n.runs?.[0]?.runId === "far-1");
    await arrived((n) => n.type === "audit" && n.events?.[0]?.type === "RunStarted");

    const cancelled = await fetch(`http://127.0.0.1:${server.port}/api/v1/runs/far-1/cancel`, {
      method: "POST",
      body: JSON.stringify({}),
    });
    expect(await cancelled.json()).toMatchObject({ control: "CANCEL", outcome: "applied" });
    expect((await owner.value.result).status).toBe("cancelled");
    await arrived(
      (n) => n.type === "audit" && n.events?.some((e) => e.type === "RunCancelled") === true,
    );
    page.close();
  });

  it("follows a queued run that a worker process runs, from its first event to its end (needs npm run build)", async () => {
    const url = await postgres().createDatabase();
    const store = await openPostgres(url);
    const [runId] = await queueRuns(store, url, { pipeline: "code-review", count: 1, delayMs: 20 });
    const server = await startInspectServer({ store, port: 0 });
    servers.push(server);
    const page = new WebSocket(`ws://127.0.0.1:${server.port}/ws/page`);
    const events: string[] = [];
    const statuses: string[] = [];
    page.on("message", (data) => {
      const news = JSON.parse(data.toString());
      if (news.type === "audit") events.push(...news.events.map((e: { type: string }) => e.type));
      if (news.type === "runs") statuses.push(news.runs[0]?.status);
    });
    await new Promise((resolve) => page.once("open", resolve));
    page.send(JSON.stringify({ type: "watch", runId, after: 0 }));

    const worker = startWorker(url, []);
    try {
      const ended = () => events.includes("RunCompleted") && statuses.includes("done");
      while (!ended()) await new Promise((later) => setTimeout(later, 20));
    } finally {
      worker.child.kill("SIGTERM");
      await worker.exited;
    }
    expect(events[0]).toBe("RunStarted");
    expect(events).toContain("StageExited");
    expect(events).toEqual((await store.auditOf(runId as string)).map((event) => event.type));
    page.close();
  });
});
