import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import type { ModelDelta } from "../../src/events/run-events.js";
import { MODEL_DELTA_MESSAGE, type StreamingReply } from "../../src/inspect/live-replies.js";
import { type InspectServer, startInspectServer } from "../../src/inspect/server.js";
import { demoProject } from "../support/cli.js";
import { codeReviewSaying, PLAN_SAYS } from "../support/streaming-runs.js";

type News = { type: string; runId?: string; delta?: ModelDelta; replies?: StreamingReply[] };

/** A page's socket watching `runId`, with every piece of news it got. */
async function pageWatching(server: InspectServer, runId: string) {
  const ws = new WebSocket(`ws://127.0.0.1:${server.port}/ws/page`);
  const news: News[] = [];
  ws.on("message", (data) => news.push(JSON.parse(data.toString())));
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  ws.send(JSON.stringify({ type: "watch", runId, after: 0 }));
  const greeted = async () => {
    await expect.poll(() => news.some((n) => n.type === "replies")).toBe(true);
    return news.find((n) => n.type === "replies")?.replies ?? [];
  };
  const deltas = () => news.flatMap((n) => (n.type === "reply-delta" && n.delta ? [n.delta] : []));
  return { ws, news, greeted, deltas };
}

const textOf = (deltas: readonly ModelDelta[]) =>
  deltas.map((d) => (d.kind === "text" ? d.text : "")).join("");

let server: InspectServer | undefined;
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await server?.close();
  server = undefined;
});

describe("a live run's streaming replies on the inspect server", () => {
  it("reach the pages watching the run in order; a page opening mid-reply gets the text so far; the turn recorded drops it", async () => {
    const project = demoProject();
    const review = await codeReviewSaying(project);
    server = await startInspectServer({ storePath: join(project, "runs.db"), port: 0, pollMs: 20 });
    const early = await pageWatching(server, "streaming-1");
    const elsewhere = await pageWatching(server, "another-run");
    sockets.push(early.ws, elsewhere.ws);
    await early.greeted();

    // Plan's first reply, held before its fourth piece of text: a reply half-way.
    let pieces = 0;
    const midReply = review.pauseBefore((part, call) => {
      if (call !== 1 || part.type !== "text-delta") return false;
      pieces += 1;
      return pieces === 4;
    });
    const { run, stream } = await review.start("streaming-1", server.streamUrl);
    if (!run.ok) throw run.error;
    const told: ModelDelta[] = [];
    const reading = (async () => {
      for await (const event of run.value.events())
        if (event.type === "ModelDelta" && event.turn === 1 && event.stageId === "plan")
          told.push(event);
    })();
    await midReply.held;

    // The pieces told so far end at a word's end (a key is never told in parts).
    const soFar = PLAN_SAYS.slice(0, 48).slice(0, PLAN_SAYS.slice(0, 48).lastIndexOf(" ") + 1);
    await expect.poll(() => textOf(early.deltas())).toBe(soFar);
    expect(early.deltas().every((d) => d.runId === "streaming-1" && d.stageId === "plan")).toBe(
      true,
    );

    const late = await pageWatching(server, "streaming-1");
    sockets.push(late.ws);
    expect(await late.greeted()).toEqual([
      expect.objectContaining({
        runId: "streaming-1",
        stageId: "plan",
        stageExecutionId: expect.stringContaining("plan"),
        attempt: 1,
        turn: 1,
        text: soFar,
        calls: [],
      }),
    ]);

    // Held again at plan's next call, its first part: the first turn has been recorded by then.
    const nextCall = review.pauseBefore((_part, call) => call === 2);
    midReply.release();
    await nextCall.held;
    await expect
      .poll(async () => {
        const page = await pageWatching(server as InspectServer, "streaming-1");
        sockets.push(page.ws);
        return page.greeted();
      })
      .toEqual([]);
    // Every piece reached the early page, in the order the run told them.
    await expect.poll(() => textOf(early.deltas())).toBe(PLAN_SAYS);
    expect(early.deltas()).toEqual(told);
    // A page watching another run got no piece of this one.
    expect(elsewhere.deltas()).toEqual([]);

    nextCall.release();
    expect((await run.value.result).status).toBe("done");
    await reading;
    stream.stop();
    review.close();
  });

  it("end with the run's stream: a stream that closes mid-reply ends its replies on the pages", async () => {
    const project = demoProject();
    const review = await codeReviewSaying(project);
    server = await startInspectServer({ storePath: join(project, "runs.db"), port: 0, pollMs: 20 });
    const page = await pageWatching(server, "cut-1");
    sockets.push(page.ws);
    await page.greeted();
    const midReply = review.pauseBefore((part) => part.type === "text-end");
    const { run, stream } = await review.start("cut-1", server.streamUrl);
    if (!run.ok) throw run.error;
    await midReply.held;
    await expect.poll(() => page.deltas().length).toBeGreaterThan(0);

    stream.stop();
    await expect
      .poll(() => page.news.find((n) => n.type === "reply-ended"))
      .toMatchObject({ runId: "cut-1", stageExecutionId: expect.stringContaining("plan") });
    const late = await pageWatching(server, "cut-1");
    sockets.push(late.ws);
    expect(await late.greeted()).toEqual([]);

    midReply.release();
    expect((await run.value.result).status).toBe("done");
    review.close();
  });

  it("end when the call failed: the call made again for the same turn streams its reply anew", async () => {
    server = await startInspectServer({ storePath: "/nonexistent/runs.db", port: 0 });
    const page = await pageWatching(server, "r1");
    sockets.push(page.ws);
    await page.greeted();
    const run = new WebSocket(server.streamUrl);
    sockets.push(run);
    await new Promise((resolve) => run.once("open", resolve));
    const stage = { sessionId: "x:1", rootId: "x:0", id: null, _version: "0.7.2" };
    const context = {
      stageId: "plan",
      runId: "r1",
      stageExecutionId: "r1/plan/1",
      attempt: 1,
      turn: 0,
    };
    const piece = (text: string) => ({
      type: MODEL_DELTA_MESSAGE,
      delta: { type: "ModelDelta", ...context, turn: 1, kind: "text", text },
    });
    const snapshot = (value: unknown) => ({
      ...stage,
      type: "@xstate.snapshot",
      event: { type: "x" },
      snapshot: { status: "active", value, context },
    });
    run.send(
      JSON.stringify({
        ...stage,
        type: "@xstate.actor",
        name: "plan",
        snapshot: { status: "active", value: { act: "calling" }, context },
      }),
    );
    run.send(JSON.stringify(piece("Half a reply, then ")));
    await expect.poll(() => textOf(page.deltas())).toBe("Half a reply, then ");

    run.send(JSON.stringify(snapshot({ act: "providerBackoff" })));
    await expect
      .poll(() => page.news.find((n) => n.type === "reply-ended"))
      .toMatchObject({ runId: "r1", stageExecutionId: "r1/plan/1" });
    run.send(JSON.stringify(snapshot({ act: "calling" })));
    run.send(JSON.stringify(piece("The whole reply. ")));
    await expect.poll(() => page.deltas().length).toBe(2);
    const late = await pageWatching(server, "r1");
    sockets.push(late.ws);
    expect((await late.greeted()).map((reply) => reply.text)).toEqual(["The whole reply. "]);
  });
});
