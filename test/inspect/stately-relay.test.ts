import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { parse, stringify } from "yaml";
import { startInspectServer } from "../../src/inspect/server.js";
import { demoProject, runIn, storeOf, summaryOf } from "../support/cli.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

const TASK_CANARY = "task-canary-51c0de";
const FILE_CANARY = "file-canary-9e7b44";
const KEY_CANARY = "sk-ant-api03-stately000000000000000000000000000000000000000";
const REPLY_CANARY = "reply-canary-3d9f10";

/** `--stately` pointed at a socket standing in for the hosted relay (it cannot be reached here). */
async function withRelay<T>(url: string, body: () => Promise<T>): Promise<T> {
  process.env.STAGECHART_STATELY_RELAY = url;
  try {
    return await body();
  } finally {
    delete process.env.STAGECHART_STATELY_RELAY;
  }
}

const portOf = (server: { address(): unknown }) => (server.address() as { port: number }).port;

describe("run --stately", () => {
  const closing: Array<{ close(): void }> = [];
  afterEach(() => {
    for (const server of closing.splice(0)) server.close();
  });

  it("hands the relay the sanitized stream only: no task, tool output or key", async () => {
    const relay = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    closing.push(relay);
    await new Promise((resolve) => relay.once("listening", resolve));
    const received: string[] = [];
    relay.on("connection", (ws) => ws.on("message", (data) => received.push(data.toString())));
    const project = demoProject();
    // Plan greps for "auth": this line comes back in its tool output.
    appendFileSync(join(project, "src/auth.ts"), `// auth secret ${FILE_CANARY} ${KEY_CANARY}\n`);
    const saved = process.env.ANTHROPIC_API_KEY;
    process.env.ANTHROPIC_API_KEY = KEY_CANARY;
    const run = await withRelay(`ws://127.0.0.1:${portOf(relay)}`, () =>
      runIn(
        project,
        "run",
        "code-review",
        "--task",
        `rename auth ${TASK_CANARY} ${KEY_CANARY}`,
        "--stately",
      ),
    ).finally(() => {
      if (saved === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = saved;
    });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^stately: https:\/\/stately\.ai\/registry\/inspect\/\S+$/m);
    // The relay closes once the run ended; what it was sent has arrived by the time it closed.
    await expect.poll(() => relay.clients.size).toBe(0);
    const messages = received.map((text) => JSON.parse(text).json);
    expect(messages.map((m) => m.type)).toContain("@xstate.actor");
    expect(messages.some((m) => m.snapshot?.context?.pipelineId === "code-review")).toBe(true);
    for (const text of received) {
      expect(text).not.toContain(TASK_CANARY);
      expect(text).not.toContain(FILE_CANARY);
      expect(text).not.toContain(KEY_CANARY);
    }
  });

  it("with --inspect, hands a streaming reply's pieces to the local server only, never the relay", async () => {
    const relay = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    closing.push(relay);
    await new Promise((resolve) => relay.once("listening", resolve));
    const received: string[] = [];
    relay.on("connection", (ws) => ws.on("message", (data) => received.push(data.toString())));
    const project = demoProject();
    const script = parse(readFileSync(join(MACHINES_DIR, "code-review.script.yaml"), "utf8"));
    script.stages.plan.unshift({ text: `Planning the rename, ${REPLY_CANARY} first. ` });
    writeFileSync(join(project, "saying.script.yaml"), stringify(script));
    const server = await startInspectServer({ storePath: storeOf(project), port: 0 });
    const page = new WebSocket(`ws://127.0.0.1:${server.port}/ws/page`);
    const news: string[] = [];
    page.on("message", (data) => news.push(data.toString()));
    await new Promise((resolve) => page.once("open", resolve));
    page.send(JSON.stringify({ type: "watch", runId: "relayed-1", after: 0 }));
    try {
      const run = await withRelay(`ws://127.0.0.1:${portOf(relay)}`, () =>
        runIn(
          project,
          ...["run", "code-review", "--task", "rename auth", "--run-id", "relayed-1"],
          ...["--model", `scripted:${join(project, "saying.script.yaml")}`],
          ...["--inspect", String(server.port), "--stately"],
        ),
      );
      expect(run.code, run.stderr).toBe(0);
      await expect.poll(() => relay.clients.size).toBe(0);
      expect(received.length).toBeGreaterThan(0);
      for (const text of received) {
        expect(text).not.toContain(REPLY_CANARY);
        expect(text).not.toContain("model-delta");
      }
      // The page watching the run on the local server got the reply as it streamed.
      const pieces = news
        .map((text) => JSON.parse(text))
        .filter((n) => n.type === "reply-delta")
        .map((n) => n.delta.text ?? "")
        .join("");
      expect(pieces).toContain(REPLY_CANARY);
    } finally {
      page.terminate();
      await server.close();
    }
  });

  it("does not wait on a relay that never answers: the run ends first, with one warning", async () => {
    // Accepts the connection and never answers the WebSocket handshake.
    const silent: Server = createServer(() => {});
    closing.push(silent);
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const run = await withRelay(`ws://127.0.0.1:${portOf(silent)}`, () =>
      runIn(demoProject(), "run", "code-review", "--task", "rename auth", "--stately", "--json"),
    );
    expect(run.code).toBe(0);
    expect(summaryOf(run.stdout).status).toBe("done");
    // Had the run waited for the relay's connect timeout, the warning would say it timed out.
    expect(run.stderr.split("\n").filter((line) => line.includes("--stately"))).toEqual([
      "stagechart: warning: --stately: not connected by the end of the run; nothing was sent; the run goes on without it",
    ]);
  });
});
