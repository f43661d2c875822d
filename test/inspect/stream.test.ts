import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createWebSocketReceiver, type StatelyInspectionEvent } from "@statelyai/inspect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import type { InspectionEvent } from "xstate";
import { MODEL_DELTA_MESSAGE } from "../../src/inspect/live-replies.js";
import { coalescer } from "../../src/inspect/stream.js";
import { SqliteStore } from "../../src/store/index.js";
import { demoProject, REPO_ROOT, runIn, storeOf, summaryOf } from "../support/cli.js";

/**
 * Stands where an inspect server would: it says it is healthy (so `--inspect` streams to it
 * rather than starting its own), keeps every message the run's inspection stream sends (the
 * sanitized stream's apart from the pieces of replies, which only a local server takes), and
 * denies the grant requests the run asks its page.
 */
async function capturingServer(): Promise<{
  port: number;
  messages: string[];
  replyPieces: string[];
  server: Server;
  receiving: () => number;
}> {
  const messages: string[] = [];
  const replyPieces: string[] = [];
  // Relays the stream, as a hosted inspector's bridge would, to `@statelyai/inspect` receivers.
  const receivers = new Set<import("ws").WebSocket>();
  const server = createServer((request, response) => {
    const found = request.url === "/api/v1/health";
    response.writeHead(found ? 200 : 404, { "content-type": "application/json" });
    response.end(found ? '{"store":true}' : "{}");
  });
  const sockets = new WebSocketServer({ server });
  sockets.on("connection", (ws, request) => {
    if (request.url === "/ws/inspect")
      ws.on("message", (data) => {
        const text = data.toString();
        if (JSON.parse(text).type === MODEL_DELTA_MESSAGE) return void replyPieces.push(text);
        messages.push(text);
        for (const receiver of receivers) receiver.send(text);
      });
    if (request.url === "/ws/receive") receivers.add(ws);
    if (request.url === "/ws/interactor")
      ws.on("message", (data) => {
        const { request: asked } = JSON.parse(data.toString());
        if (asked)
          ws.send(
            JSON.stringify({
              type: "grant-answer",
              proposalId: asked.proposalId,
              decision: "deny",
            }),
          );
      });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    messages,
    replyPieces,
    server,
    receiving: () => receivers.size,
  };
}

const TASK_CANARY = "task-canary-7f3a9c";
const FILE_CANARY = "file-canary-b81d2e";
const KEY_CANARY = "sk-ant-api03-canary0000000000000000000000000000000000000000";

describe("a run's inspection stream", () => {
  let captured: Awaited<ReturnType<typeof capturingServer>>;
  let project: string;
  let runId: string;
  const saved = process.env.ANTHROPIC_API_KEY;
  const received: StatelyInspectionEvent[] = [];

  beforeAll(async () => {
    captured = await capturingServer();
    createWebSocketReceiver({ server: `ws://127.0.0.1:${captured.port}/ws/receive` }).subscribe(
      (event) => received.push(event),
    );
    while (captured.receiving() < 1) await new Promise((resolve) => setTimeout(resolve, 10));
    project = demoProject();
    // Plan greps for "auth": this line comes back in its tool output.
    appendFileSync(join(project, "src/auth.ts"), `// auth secret ${FILE_CANARY} ${KEY_CANARY}\n`);
    process.env.ANTHROPIC_API_KEY = KEY_CANARY;
    const run = await runIn(
      project,
      "run",
      "code-review",
      "--task",
      `rename auth to authentication ${TASK_CANARY} ${KEY_CANARY}`,
      "--headless",
      "--inspect",
      String(captured.port),
      "--json",
    );
    runId = summaryOf(run.stdout).runId;
  });
  afterAll(() => {
    if (saved === undefined) delete process.env.ANTHROPIC_API_KEY;
    else process.env.ANTHROPIC_API_KEY = saved;
    captured?.server.close();
  });

  it("carries the run's shape, and the canaries are really in the run's records", () => {
    const parsed = captured.messages.map(
      (m) =>
        JSON.parse(m) as {
          type: string;
          sessionId: string;
          snapshot?: { status?: string; context?: { runId?: string; stageId?: string } };
        },
    );
    const root = parsed.find(
      (m) => m.type === "@xstate.actor" && m.snapshot?.context?.runId === runId,
    );
    expect(root).toBeDefined();
    const last = parsed.findLast((m) => m.sessionId === root?.sessionId);
    expect(last?.snapshot?.status).toBe("done");
    const stages = parsed.flatMap((m) => m.snapshot?.context?.stageId ?? []);
    expect(new Set(stages).size).toBeGreaterThan(1);
    const store = SqliteStore.open(storeOf(project));
    if (!store.ok) throw store.error;
    try {
      const transcript = JSON.stringify(store.value.read(`${runId}/plan/1`));
      expect(transcript).toContain(FILE_CANARY);
      expect(transcript).toContain(TASK_CANARY);
    } finally {
      store.value.close();
    }
  });

  it("sends no prompt, no tool output and no key", () => {
    const all = [...captured.messages, ...captured.replyPieces].join("\n");
    expect(all).not.toContain(TASK_CANARY);
    expect(all).not.toContain(FILE_CANARY);
    expect(all).not.toContain(KEY_CANARY);
    expect(all).not.toContain("rename auth to authentication");
  });

  it("sends each machine definition once per actor, never with a snapshot", () => {
    const parsed = captured.messages.map(
      (m) => JSON.parse(m) as { type: string; sessionId: string; definition?: string },
    );
    const actors = parsed.filter((m) => m.type === "@xstate.actor");
    const withDefinition = actors.filter((m) => m.definition);
    expect(withDefinition.length).toBeGreaterThan(0);
    const sessions = withDefinition.map((m) => m.sessionId);
    expect(new Set(sessions).size).toBe(sessions.length);
    const snapshots = captured.messages.filter((m) => JSON.parse(m).type === "@xstate.snapshot");
    expect(snapshots.length).toBeGreaterThan(0);
    for (const snapshot of snapshots) {
      expect(snapshot).not.toContain('"definition"');
      expect(snapshot).not.toContain('"machine"');
    }
  });

  it("speaks @statelyai/inspect's protocol: each message has its type, session and version", () => {
    for (const message of captured.messages)
      expect(JSON.parse(message)).toMatchObject({
        type: expect.stringMatching(/^@xstate\.(actor|event|snapshot)$/),
        sessionId: expect.any(String),
        _version: expect.any(String),
      });
  });

  it("sends each event a pipeline or stage machine took, in order, as @statelyai/inspect's own receiver reads it", async () => {
    await expect.poll(() => received.length).toBe(captured.messages.length);
    const met = new Set<string>();
    const events: Extract<StatelyInspectionEvent, { type: "@xstate.event" }>[] = [];
    for (const message of received) {
      if (message.type === "@xstate.actor") met.add(message.sessionId);
      if (message.type !== "@xstate.event") continue;
      // The receiver has met the actor an event goes to, and the one it comes from.
      expect(met).toContain(message.sessionId);
      if (message.sourceId !== undefined) expect(met).toContain(message.sourceId);
      events.push(message);
    }
    const root = received.find(
      (m) =>
        m.type === "@xstate.actor" &&
        (m.snapshot as { context?: { runId?: string } }).context?.runId === runId,
    );
    const rootEvents = events
      .filter((event) => event.sessionId === root?.sessionId)
      .map((event) => event.event.type)
      .filter((type) => type.startsWith("xstate.done.actor."));
    expect(rootEvents).toEqual(
      ["plan", "execute", "review"].map((stage) => expect.stringContaining(stage)),
    );
    // Stage machines take their own events too (their setup's, their model turns' results).
    expect(events.filter((event) => event.sessionId !== root?.sessionId).length).toBeGreaterThan(3);
    for (const event of events) expect(Object.keys(event.event)).not.toContain("output");
  });

  it("carries state machines only: no actor of a model call or a tool", () => {
    const actors = captured.messages
      .map((m) => JSON.parse(m) as { type: string; definition?: string })
      .filter((m) => m.type === "@xstate.actor");
    expect(actors.length).toBeGreaterThan(1);
    for (const actor of actors)
      expect(JSON.parse(actor.definition ?? "{}")).toHaveProperty("states");
  });

  it("carries the pieces of the model's replies apart from the sanitized stream, in messages of stagechart's own", () => {
    const pieces = captured.replyPieces.map(
      (m) =>
        JSON.parse(m) as { type: string; delta: { type: string; runId: string; kind: string } },
    );
    expect(pieces.length).toBeGreaterThan(0);
    for (const piece of pieces)
      expect(piece).toMatchObject({ delta: { type: "ModelDelta", runId } });
    // Plan's first call, an Edit, as it was written: its arguments, whole once put together.
    const edit = pieces
      .map((p) => p.delta as { kind: string; tool?: string; input?: string; stageId?: string })
      .filter((d) => d.kind === "tool-call" && d.tool === "Edit" && d.stageId === "plan");
    expect(JSON.parse(edit.map((d) => d.input).join("")).path).toBe("src/auth.ts");
  });

  it("stays small: a few tens of kilobytes for the whole run", () => {
    const bytes = captured.messages.reduce((sum, m) => sum + Buffer.byteLength(m), 0);
    expect(bytes).toBeLessThan(200 * 1024);
  });
});

describe("the stream's coalescing", () => {
  const actor = { sessionId: "x:1" };
  const created = { type: "@xstate.actor", actorRef: actor } as unknown as InspectionEvent;
  const snapshot = (value: string) =>
    ({
      type: "@xstate.snapshot",
      actorRef: actor,
      snapshot: { value },
    }) as unknown as InspectionEvent;
  const valuesOf = (sent: InspectionEvent[]) =>
    sent.map((e) =>
      e.type === "@xstate.snapshot"
        ? (e.snapshot as unknown as { value: string }).value
        : e.type === "@xstate.event"
          ? e.event.type
          : e.type,
    );

  const received = (type: string) =>
    ({ type: "@xstate.event", actorRef: actor, event: { type } }) as unknown as InspectionEvent;

  it("passes on an actor's creation, every event in order and only its latest snapshot once the event loop turns", async () => {
    const sent: InspectionEvent[] = [];
    const stream = coalescer((event) => sent.push(event));
    stream.next?.(received("FIRST"));
    stream.next?.(created);
    for (const value of ["a", "b", "c"]) stream.next?.(snapshot(value));
    stream.next?.(received("SECOND"));
    stream.next?.({ type: "@xstate.microstep", actorRef: actor } as unknown as InspectionEvent);
    expect(sent).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(valuesOf(sent)).toEqual(["@xstate.actor", "FIRST", "SECOND", "c"]);
  });

  it("sends what it holds at once when flushed, as a run's stream does before it stops", () => {
    const sent: InspectionEvent[] = [];
    const stream = coalescer((event) => sent.push(event));
    stream.next?.(snapshot("done"));
    stream.flush();
    expect(valuesOf(sent)).toEqual(["done"]);
  });
});

/** A server that takes each WebSocket connection and drops it at once, counting the attempts. */
async function droppingServer(): Promise<{ url: string; attempts: () => number; server: Server }> {
  let attempts = 0;
  const server = createServer();
  server.on("upgrade", (_request, socket) => {
    attempts += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { url: `ws://127.0.0.1:${port}/ws/inspect`, attempts: () => attempts, server };
}

describe("a run's inspection stream whose server drops the connection (needs npm run build)", () => {
  it("says so once, never reconnects after stop(), and lets the process exit", async () => {
    const dropping = await droppingServer();
    let child: ReturnType<typeof spawn> | undefined;
    try {
      const stream = pathToFileURL(join(REPO_ROOT, "dist/inspect/stream.js")).href;
      // A process of its own: it ends by itself only if nothing of the stream outlives stop().
      const script = `
        const { createRunInspector } = await import(${JSON.stringify(stream)});
        const inspector = createRunInspector(${JSON.stringify(dropping.url)}, (reason) => {
          process.stdout.write("lost: " + reason + "\\n");
          inspector.stop();
        });`;
      child = spawn(process.execPath, ["--input-type=module", "-e", script]);
      let stdout = "";
      child.stdout?.on("data", (data) => {
        stdout += data;
      });
      const exited = child;
      const code = await new Promise((resolve) => exited.on("exit", resolve));
      expect(code).toBe(0);
      const reports = stdout.split("\n").filter((line) => line.startsWith("lost: "));
      expect(reports).toHaveLength(1);
      expect(reports[0]).toContain("127.0.0.1");
      expect(dropping.attempts()).toBe(1);
    } finally {
      if (child?.exitCode === null) child.kill();
      dropping.server.close();
    }
  }, 20_000);
});
