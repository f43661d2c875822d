import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RunQuery } from "../../src/runtime/run-records.js";
import { type ServeServer, startServeServer } from "../../src/serve/server.js";
import type { WebhookFailure } from "../../src/serve/webhooks.js";
import { SqliteStore } from "../../src/store/index.js";
import { servedProject } from "../support/served-project.js";
import { webhookReceiver } from "../support/webhook-receiver.js";

const SECRET = "a-webhook-secret-for-the-tests";
const QUICK = { pipeline: "code-review", task: "rename auth", model: "scripted:quick.script.yaml" };

/** A reply's JSON, read loosely: each test's expectations say what it holds. */
// biome-ignore lint/suspicious/noExplicitAny: replies of many shapes, each checked where it is read
type Json = any;

const closing: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/**
 * `stagechart serve` over a fresh served project's SQLite store, its webhooks to `hooks`; each
 * run listing it asks of the store goes to `listings` when that is given.
 */
async function served(
  options: {
    hooks?: string[];
    token?: string;
    attempts?: number;
    failed?: WebhookFailure[];
    pollMs?: number;
    listings?: RunQuery[];
  } = {},
) {
  const { root, pipelines } = servedProject();
  const store = SqliteStore.open(join(root, "runs.db"));
  if (!store.ok) throw store.error;
  closing.push(() => store.value.close());
  const { listings } = options;
  if (listings) {
    const listRuns = store.value.listRuns.bind(store.value);
    store.value.listRuns = (query?: RunQuery) => {
      listings.push(query ?? {});
      return listRuns(query);
    };
  }
  const server = await startServeServer({
    store: store.value,
    runs: "in-process",
    pipelinesDir: pipelines,
    settings: { root, mode: "ask" },
    pollMs: options.pollMs ?? 50,
    ...(options.token && { token: options.token }),
    ...(options.hooks && {
      webhooks: {
        urls: options.hooks,
        secret: SECRET,
        attempts: options.attempts ?? 3,
        backoffMs: 20,
      },
    }),
    onWebhookFailed: (failure) => options.failed?.push(failure),
  });
  closing.push(() => server.close());
  return { server, store: store.value, root, ...client(server, options.token) };
}

function client(server: ServeServer, token?: string) {
  const headers = (extra: Record<string, string> = {}) => ({
    ...(token && { authorization: `Bearer ${token}` }),
    ...extra,
  });
  const call = async (method: string, path: string, body?: unknown, extra = {}) => {
    const response = await fetch(`${server.apiUrl}${path}`, {
      method,
      headers: headers(extra),
      ...(body !== undefined && { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    const json: Json = await response.json();
    return { status: response.status, headers: response.headers, body: json };
  };
  return {
    get: (path: string) => call("GET", path),
    post: (path: string, body?: unknown, extra: Record<string, string> = {}) =>
      call("POST", path, body, extra),
    /** The run's view once its status is `status` (10 s at most). */
    async until(runId: string, status: string) {
      for (let i = 0; i < 500; i++) {
        const run = await call("GET", `/runs/${encodeURIComponent(runId)}`);
        if (run.body.status === status) return run.body;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`run ${runId} never became ${status}`);
    },
  };
}

describe("stagechart serve's API", () => {
  it("starts a run over HTTP, which finishes, and a signed webhook tells its end", async () => {
    const receiver = await webhookReceiver(SECRET);
    closing.push(() => receiver.close());
    const { post, get, until } = await served({ hooks: [receiver.url] });
    const started = await post("/runs", QUICK);
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ pipelineId: "code-review", status: "running" });
    const { runId } = started.body;
    expect((await until(runId, "done")).output).toBeDefined();
    const ended = await receiver.next(runId, "run.ended");
    expect(ended).toMatchObject({
      signed: true,
      body: { status: "done", pipelineId: "code-review" },
    });
    expect((await get("/runs")).body).toEqual([expect.objectContaining({ runId, status: "done" })]);
    expect((await get(`/runs/${runId}/audit`)).body.at(-1)).toMatchObject({ type: "RunCompleted" });
  });

  it("looks at the store's runs once for the page and the webhooks alike, as often as pollMs says", async () => {
    const receiver = await webhookReceiver(SECRET);
    closing.push(() => receiver.close());
    const listings: RunQuery[] = [];
    const { server, post, until } = await served({
      hooks: [receiver.url],
      pollMs: 60_000,
      listings,
    });
    // The first look, taken before the server listens, is the webhooks' baseline.
    expect(listings).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(listings).toHaveLength(1);

    const { body } = await post("/runs", QUICK);
    await until(body.runId, "done");
    await server.settled();
    expect(listings).toHaveLength(2);
    expect((await receiver.next(body.runId, "run.ended")).body.status).toBe("done");
  });

  it("tells of a grant request over a webhook, takes its answer over HTTP, and tells the end", async () => {
    const receiver = await webhookReceiver(SECRET);
    closing.push(() => receiver.close());
    const { post, until } = await served({ hooks: [receiver.url] });
    // The bundled script's plan edits a file outside its envelope: a grant request.
    const { body } = await post("/runs", { pipeline: "code-review", task: "rename auth" });
    const waiting = await receiver.next(body.runId, "run.waiting");
    expect(waiting.signed).toBe(true);
    const [grant] = waiting.body.waiting ?? [];
    expect(grant).toMatchObject({ kind: "grant", proposalId: expect.any(String) });
    const proposal = encodeURIComponent(String(grant?.proposalId));
    const answered = await post(`/runs/${body.runId}/grants/${proposal}`, {
      decision: "approve",
    });
    expect(answered).toMatchObject({ status: 200, body: { answered: "resumed" } });
    await until(body.runId, "done");
    expect((await receiver.next(body.runId, "run.ended")).body.status).toBe("done");
  });

  it("tells of an ask stage's question, takes the answer checked against its schema, and ends", async () => {
    const receiver = await webhookReceiver(SECRET);
    closing.push(() => receiver.close());
    const { post, until } = await served({ hooks: [receiver.url] });
    const { body } = await post("/runs", { pipeline: "deciding" });
    const waiting = await receiver.next(body.runId, "run.waiting");
    const [ask] = waiting.body.waiting ?? [];
    expect(ask).toMatchObject({ kind: "input", stageExecutionId: `${body.runId}/decide/1` });
    const at = `/runs/${body.runId}/asks/${encodeURIComponent(String(ask?.stageExecutionId))}`;
    const wrong = await post(at, { value: { decision: "maybe" } });
    expect(wrong).toMatchObject({
      status: 400,
      body: { error: { code: "Validation/InputInvalid" } },
    });
    expect(await post(at, { value: { decision: "accepted" } })).toMatchObject({ status: 200 });
    await until(body.runId, "done");
    expect((await receiver.next(body.runId, "run.ended")).body.status).toBe("done");
  });

  it("cancels a waiting run through the control path", async () => {
    const { post, until } = await served();
    const { body } = await post("/runs", { pipeline: "deciding" });
    await until(body.runId, "suspended");
    const cancelled = await post(`/runs/${body.runId}/cancel`, { reason: "not needed" });
    expect(cancelled).toMatchObject({
      status: 200,
      body: { runId: body.runId, control: "CANCEL", outcome: "resumed" },
    });
    await until(body.runId, "cancelled");
  });

  it("starts one run for one Idempotency-Key and body, and refuses the key with another body", async () => {
    const { post, get, until } = await served();
    const key = { "idempotency-key": "order-1234" };
    const first = await post("/runs", QUICK, key);
    expect(first.status).toBe(201);
    const again = await post(
      "/runs",
      { task: QUICK.task, model: QUICK.model, pipeline: QUICK.pipeline },
      key,
    );
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.runId).toBe(first.body.runId);
    const other = await post("/runs", { ...QUICK, task: "something else" }, key);
    expect(other).toMatchObject({
      status: 409,
      body: { error: { code: "Session/IdempotencyKeyReused" } },
    });
    await until(first.body.runId, "done");
    expect((await post("/runs", QUICK, key)).body).toMatchObject({
      runId: first.body.runId,
      status: "done",
    });
    expect((await get("/runs")).body).toHaveLength(1);
    const both = await post("/runs", { ...QUICK, runId: "mine" }, { "idempotency-key": "k2" });
    expect(both.body.error.code).toBe("Validation/RequestBodyInvalid");
  });

  it.each([
    ["not JSON", "{pipeline:", "it is not JSON"],
    ["neither pipeline nor definition", { task: "x" }, "give either pipeline"],
    ["an unknown field", { ...QUICK, colour: "red" }, "colour"],
    ["a ctx that is not an object", { ...QUICK, ctx: [1] }, "ctx"],
  ])("refuses a start with %s: 400 with a coded error, no stack", async (_, body, says) => {
    const { post } = await served();
    const refused = await post("/runs", body);
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe("Validation/RequestBodyInvalid");
    expect(refused.body.error.message).toContain(says);
    expect(JSON.stringify(refused.body)).not.toMatch(/\n\s+at /);
  });

  it("refuses what cannot start with the code that says why", async () => {
    const { post } = await served();
    const none = await post("/runs", { pipeline: "../etc/passwd" });
    expect(none.body.error.code).toBe("Validation/PipelineNotFound");
    const outside = await post("/runs", { ...QUICK, model: "scripted:../../x.yaml" });
    expect(outside.body.error.code).toBe("Validation/ModelSpecOutsideServed");
    const noTask = await post("/runs", { pipeline: "code-review" });
    expect(noTask).toMatchObject({
      status: 400,
      body: { error: { code: "Validation/RunContextInvalid" } },
    });
    const grant = await post("/runs/nope/grants/p1", { decision: "maybe" });
    expect(grant.body.error.code).toBe("Validation/RequestBodyInvalid");
    expect((await post("/runs/nope/grants/p1", { decision: "approve" })).status).toBe(404);
  });

  it("needs the bearer token when it has one", async () => {
    const token = "the-servers-access-token";
    const { server } = await served({ token });
    const health = (headers: Record<string, string>) =>
      fetch(`${server.apiUrl}/health`, { headers });
    const missing = await health({});
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe("Bearer");
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe(
      "Validation/ApiTokenMissing",
    );
    expect((await health({ authorization: "Bearer another-token-of-same-size" })).status).toBe(401);
    expect((await health({ authorization: `Bearer ${token}` })).status).toBe(200);
  });

  it("refuses to serve beyond loopback without a token", async () => {
    const { root, pipelines } = servedProject();
    const store = SqliteStore.open(join(root, "runs.db"));
    if (!store.ok) throw store.error;
    closing.push(() => store.value.close());
    await expect(
      startServeServer({
        store: store.value,
        runs: "in-process",
        pipelinesDir: pipelines,
        settings: { root, mode: "ask" },
        host: "0.0.0.0",
      }),
    ).rejects.toMatchObject({ code: "Validation/InspectTokenMissing" });
  });

  it("retries a webhook whose receiver fails, then gives it up without failing the run", async () => {
    const receiver = await webhookReceiver(SECRET, () => 503);
    closing.push(() => receiver.close());
    const failed: WebhookFailure[] = [];
    const { server, post, until } = await served({ hooks: [receiver.url], attempts: 3, failed });
    const { body } = await post("/runs", QUICK);
    await until(body.runId, "done");
    await server.settled();
    expect(receiver.attempts()).toBe(3);
    expect(failed).toEqual([
      expect.objectContaining({ runId: body.runId, event: "run.ended", attempts: 3 }),
    ]);
    expect(failed[0]?.error.code).toBe("ExtensionHost/WebhookFailed");
    expect(failed[0]?.error.message).not.toContain(SECRET);
  });

  it("gives up on a receiver that is not there", async () => {
    const receiver = await webhookReceiver(SECRET);
    await receiver.close();
    const failed: WebhookFailure[] = [];
    const { server, post, until } = await served({ hooks: [receiver.url], attempts: 2, failed });
    const { body } = await post("/runs", QUICK);
    await until(body.runId, "done");
    await server.settled();
    expect(failed.map((f) => f.error.code)).toEqual(["ExtensionHost/WebhookFailed"]);
  });

  it("answers the page's routes in the same API: a started run's steps and audit, no unversioned /api", async () => {
    const { server, post, until } = await served();
    const { body } = await post("/runs", QUICK);
    await until(body.runId, "done");
    const steps = await fetch(`${server.apiUrl}/runs/${body.runId}/steps`);
    expect(steps.status).toBe(200);
    expect(((await steps.json()) as unknown[]).length).toBeGreaterThan(0);
    const audit = await fetch(`${server.apiUrl}/runs/${body.runId}/audit?after=1`);
    expect(((await audit.json()) as Array<{ seq: number }>)[0]?.seq).toBe(2);
    const base = server.apiUrl.replace(/\/api\/v1$/, "");
    const old = await fetch(`${base}/api/runs/${body.runId}`);
    expect(old.status).toBe(404);
  });
});
