import { mkdtempSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { demoProject, runIn, storeOf, summaryOf } from "../support/cli.js";

/** A raw GET, so the Host and Origin headers are what the test says (fetch forbids setting Host). */
function rawGet(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers }, (response) => {
      let body = "";
      response.on("data", (chunk) => {
        body += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

const TASK = ["--task", "rename auth to authentication"];

describe("the inspect server's API", () => {
  let project: string;
  let server: InspectServer;
  let runId: string;
  const api = (path: string) => fetch(`http://127.0.0.1:${server.port}${path}`);

  beforeAll(async () => {
    project = demoProject();
    const run = await runIn(project, "run", "code-review-parallel", ...TASK, "--json");
    runId = summaryOf(run.stdout).runId;
    server = await startInspectServer({ storePath: storeOf(project), port: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("answers a stored run's routes with JSON", async () => {
    const runs = (await (await api("/api/v1/runs")).json()) as Array<{ runId: string }>;
    expect(runs.map((r) => r.runId)).toEqual([runId]);
    const audit = (await (await api(`/api/v1/runs/${runId}/audit`)).json()) as unknown[];
    expect(audit.length).toBeGreaterThan(10);
  });

  it("sends the run's chart laid out both ways, a box for every state and the entry's marker, so the page needs no layout engine", async () => {
    type Laid = { id: string; x?: number; y?: number; width?: number; children?: Laid[] };
    type Node = { id: string; children: Node[]; sub?: { root: Node } };
    const graph = (await (await api(`/api/v1/runs/${runId}/graph`)).json()) as {
      pipeline: { root: Node };
      layouts: { right: Laid; down: Laid };
    };
    const ids = (node: Node): string[] => [
      node.id,
      ...node.children.flatMap(ids),
      ...(node.sub?.root.children.flatMap(ids) ?? []),
    ];
    const laidIds = (node: Laid): string[] => [
      ...(node.children ?? []).flatMap((child) => [child.id, ...laidIds(child)]),
    ];
    const states = ids(graph.pipeline.root).slice(1);
    expect(states.length).toBeGreaterThan(3);
    for (const laid of [graph.layouts.right, graph.layouts.down]) {
      expect(new Set(laidIds(laid))).toEqual(new Set([...states, "code-review-parallel#initial"]));
      expect(laid.width).toBeGreaterThan(0);
    }
  });

  it.each([
    ["an unknown run", "/api/v1/runs/nope", 404, "Session/RunNotFound"],
    ["an unknown route", "/api/v1/nothing", 404, "Validation/RouteNotFound"],
    ["an unknown route under a run", "/api/v1/runs/RUN/nothing", 404, "Validation/RouteNotFound"],
    ["a step the run does not have", "/api/v1/runs/RUN/steps/9999", 404, "Session/StepNotFound"],
    ["a step that is not a number", "/api/v1/runs/RUN/steps/abc", 404, "Session/StepNotFound"],
    [
      "a transcript of another run",
      "/api/v1/runs/RUN/transcripts/other-run%2Fplan%2F1",
      404,
      "Validation/RouteNotFound",
    ],
    [
      "a journal key of another run",
      "/api/v1/runs/RUN/journal/model:other%2Fx",
      404,
      "Validation/RouteNotFound",
    ],
    ["an unknown live actor", "/api/v1/live/nope/graph", 404, "Session/ActorNotFound"],
    ["a page that does not exist", "/nothing/here", 404, "Validation/RouteNotFound"],
    ["an unversioned API route (the API is /api/v1)", "/api/runs", 404, "Validation/RouteNotFound"],
  ])("refuses %s with a coded JSON error, no stack", async (_what, path, status, code) => {
    const reply = await api(path.replace("RUN", runId));
    expect(reply.status).toBe(status);
    expect(reply.headers.get("content-type")).toContain("application/json");
    const text = await reply.text();
    expect(JSON.parse(text)).toEqual({ error: expect.objectContaining({ code }) });
    expect(text).not.toMatch(/\bat .+:\d+:\d+/);
  });

  it("refuses a grant answer that is neither approve nor deny, and one no run waits for", async () => {
    const post = (decision: unknown) =>
      fetch(`http://127.0.0.1:${server.port}/api/v1/runs/${runId}/grants/p-1`, {
        method: "POST",
        body: JSON.stringify({ decision }),
      });
    const bad = await post("maybe");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: expect.objectContaining({ code: "Validation/RequestBodyInvalid" }),
    });
    const none = await post("approve");
    expect(none.status).toBe(409);
    expect(await none.json()).toEqual({
      error: expect.objectContaining({ code: "Session/NoPendingGrant" }),
    });
  });

  it("serves loopback Host names only: a DNS-rebound name is refused", async () => {
    expect(
      (await rawGet(server.port, "/api/v1/runs", { host: `localhost:${server.port}` })).status,
    ).toBe(200);
    const rebound = await rawGet(server.port, "/api/v1/runs", {
      host: `evil.example:${server.port}`,
    });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error.code).toBe("Validation/InspectForbidden");
  });

  it("refuses a request from another site's page, and serves its own", async () => {
    const own = `http://127.0.0.1:${server.port}`;
    expect((await rawGet(server.port, "/api/v1/runs", { origin: own })).status).toBe(200);
    const foreign = await rawGet(server.port, "/api/v1/runs", { origin: "http://evil.example" });
    expect(foreign.status).toBe(403);
  });

  it("refuses a WebSocket from another site's page", async () => {
    const { WebSocket } = await import("ws");
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${server.port}/ws/page`, {
        origin: "http://evil.example",
      });
      ws.on("unexpected-response", (_req, response) => resolve(response.statusCode ?? 0));
      ws.on("open", () => resolve(101));
      ws.on("error", () => {});
    });
    expect(refused).toBe(403);
  });
});

describe("a server that stops after its run (run --inspect)", () => {
  it("lives until each page watching the run says it shows the run's last event", async () => {
    const project = demoProject();
    const run = await runIn(project, "run", "code-review-parallel", ...TASK, "--json");
    const { runId } = summaryOf(run.stdout);
    const server = await startInspectServer({ storePath: storeOf(project), port: 0 });
    const page = new WebSocket(`ws://127.0.0.1:${server.port}/ws/page`);
    const news: { type: string }[] = [];
    const arrived = (type: string) =>
      new Promise<void>((resolve) => {
        const check = () => (news.some((n) => n.type === type) ? resolve() : setTimeout(check, 5));
        check();
      });
    page.on("message", (data) => news.push(JSON.parse(data.toString())));
    await new Promise((resolve) => page.once("open", resolve));
    page.send(JSON.stringify({ type: "watch", runId }));
    await arrived("grants");
    let flushed = false;
    const flushing = server.flush(runId).then(() => {
      flushed = true;
    });
    const audit = (await (
      await fetch(`http://127.0.0.1:${server.port}/api/v1/runs/${runId}/audit`)
    ).json()) as { seq: number }[];
    const lastSeq = audit.at(-1)?.seq;
    // A round trip later, the page has shown nothing yet: the server still waits for it.
    news.length = 0;
    page.send(JSON.stringify({ type: "watch", runId }));
    await arrived("grants");
    expect(flushed).toBe(false);
    page.send(JSON.stringify({ type: "shown", runId, seq: lastSeq }));
    await flushing;
    expect(flushed).toBe(true);
    page.close();
    await server.close();
  });
});

describe("closing the inspect server", () => {
  it("ends even while a client is half-way through a request", async () => {
    const server = await startInspectServer({ storePath: join(tmpdir(), "none.db"), port: 0 });
    const socket = connect(server.port, "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write("GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    // The server resets it: that is how the connection ends.
    socket.on("error", () => {});
    const ended = new Promise((resolve) => socket.once("close", resolve));
    await server.close();
    await ended;
  });
});

describe("pages watching a run", () => {
  it("get the events after the last one they hold, though more were stored before they asked", async () => {
    const project = demoProject();
    const run = await runIn(project, "run", "code-review", ...TASK, "--json");
    const { runId } = summaryOf(run.stdout);
    const server = await startInspectServer({ storePath: storeOf(project), port: 0, pollMs: 10 });
    const page = new WebSocket(`ws://127.0.0.1:${server.port}/ws/page`);
    const audit = new Promise<{ events: { seq: number }[] }>((resolve) =>
      page.on("message", (data) => {
        const news = JSON.parse(data.toString());
        if (news.type === "audit") resolve(news);
      }),
    );
    await new Promise((resolve) => page.once("open", resolve));
    // The page fetched the run when it held 3 events; the run stored more before it watched.
    page.send(JSON.stringify({ type: "watch", runId, after: 3 }));
    expect((await audit).events[0]?.seq).toBe(4);
    page.close();
    await server.close();
  });
});

describe("inspection streams", () => {
  it("keeps two runs apart though each actor system numbers its actors from x:0", async () => {
    const { WebSocket } = await import("ws");
    const server = await startInspectServer({ storePath: "/nonexistent/runs.db", port: 0 });
    const stream = (name: string) =>
      new Promise<void>((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${server.port}/ws/inspect`);
        ws.on("error", reject);
        ws.on("open", () => {
          const actor = { type: "@xstate.actor", sessionId: "x:0", rootId: "x:0", name };
          ws.send(JSON.stringify({ ...actor, snapshot: { status: "active", value: "a" } }));
          ws.close();
        });
        ws.on("close", () => resolve());
      });
    try {
      await stream("first");
      await stream("second");
      await expect
        .poll(async () => {
          const live = (await (
            await fetch(`http://127.0.0.1:${server.port}/api/v1/live`)
          ).json()) as Array<{ name: string }>;
          return live.map((r) => r.name).sort();
        })
        .toEqual(["first", "second"]);
    } finally {
      await server.close();
    }
  });
});

describe("an inspection stream that closes", () => {
  it("ends its machine's live view with the last state it sent, no longer active", async () => {
    const server = await startInspectServer({ storePath: "/nonexistent/runs.db", port: 0 });
    const live = async () =>
      (await (await fetch(`http://127.0.0.1:${server.port}/api/v1/live`)).json()) as Array<{
        name: string;
        status?: string;
        value?: unknown;
        closed?: boolean;
      }>;
    // What `@statelyai/inspect`'s createWebSocketInspector sends of an app's root machine.
    const sent = { sessionId: "x:0", rootId: "x:0", _version: "1.0.0", id: null };
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/ws/inspect`);
    try {
      await new Promise((resolve, reject) => {
        ws.on("open", resolve);
        ws.on("error", reject);
      });
      ws.send(
        JSON.stringify({
          ...sent,
          type: "@xstate.actor",
          name: "checkout",
          definition: JSON.stringify({
            id: "checkout",
            initial: "cart",
            states: { cart: {}, paying: {} },
          }),
          snapshot: { status: "active", value: "cart" },
        }),
      );
      await expect.poll(live).toEqual([expect.objectContaining({ status: "active" })]);
      ws.send(
        JSON.stringify({
          ...sent,
          type: "@xstate.snapshot",
          event: { type: "PAY" },
          snapshot: { status: "active", value: "paying" },
        }),
      );
      ws.close();
      await expect.poll(live).toEqual([
        expect.objectContaining({
          name: "checkout",
          status: "stopped",
          value: "paying",
          closed: true,
        }),
      ]);
    } finally {
      ws.terminate();
      await server.close();
    }
  });
});

describe("the page's Content-Security-Policy", () => {
  it("allows the page's own server only: no eval, no worker, no inline code", async () => {
    const assets = mkdtempSync(join(tmpdir(), "stagechart-assets-"));
    writeFileSync(join(assets, "index.html"), "<!doctype html><title>page</title>");
    const server = await startInspectServer({ storePath: "/nonexistent/runs.db", port: 0, assets });
    try {
      const page = await fetch(`http://127.0.0.1:${server.port}/runs/some-run`);
      expect(page.status).toBe(200);
      const policy = Object.fromEntries(
        (page.headers.get("content-security-policy") ?? "")
          .split(";")
          .map((directive) => directive.trim().split(/\s+/))
          .map(([name, ...sources]) => [name, sources]),
      );
      expect(policy["default-src"]).toEqual(["'none'"]);
      for (const directive of ["script-src", "connect-src", "style-src", "img-src"])
        expect(policy[directive]).toEqual(["'self'"]);
      expect(policy["worker-src"]).toEqual(["'none'"]);
      expect(policy["frame-ancestors"]).toEqual(["'none'"]);
    } finally {
      await server.close();
    }
  });
});

describe("where the inspect server listens", () => {
  it("listens on loopback by default", async () => {
    const server = await startInspectServer({ storePath: "/nonexistent/runs.db", port: 0 });
    try {
      expect(server.url).toBe(`http://127.0.0.1:${server.port}/`);
    } finally {
      await server.close();
    }
  });

  it("refuses another host without an access token", async () => {
    await expect(
      startInspectServer({ storePath: "/nonexistent/runs.db", host: "0.0.0.0", port: 0 }),
    ).rejects.toMatchObject({ code: "Validation/InspectTokenMissing" });
  });

  it("with a token, wants it on every request: query, header or cookie", async () => {
    const token = "t0ken-of-the-test";
    const server = await startInspectServer({
      storePath: "/nonexistent/runs.db",
      host: "0.0.0.0",
      port: 0,
      token,
    });
    const status = async (path: string, headers: Record<string, string> = {}) =>
      (await rawGet(server.port, path, headers)).status;
    try {
      expect(server.url).toContain(`?token=${token}`);
      expect(await status("/api/v1/runs")).toBe(401);
      expect(await status("/api/v1/runs?token=wrong-token-of-the-tes")).toBe(401);
      expect(await status("/api/v1/runs?token=short")).toBe(401);
      expect(await status("/")).toBe(403);
      expect(await status(`/api/v1/runs?token=${token}`)).toBe(200);
      expect(await status("/api/v1/runs", { "x-stagechart-token": token })).toBe(200);
      expect(await status("/api/v1/runs", { cookie: `a=b; stagechart_token=${token}` })).toBe(200);
      expect(await status("/api/v1/runs", { cookie: "stagechart_token=nope" })).toBe(401);
    } finally {
      await server.close();
    }
  });
});
