import { afterEach, describe, expect, it } from "vitest";
import { startServeServer } from "../../src/serve/server.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { runWorker } from "../../src/worker/run-worker.js";
import { noPostgres, testPostgres } from "../support/postgres.js";
import { servedProject } from "../support/served-project.js";
import { tempDir } from "../support/stages.js";
import { webhookReceiver } from "../support/webhook-receiver.js";

const postgres = testPostgres();
const SECRET = "a-webhook-secret-for-the-tests";

const closing: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function openPostgres(url: string): Promise<PostgresStore> {
  const opened = await PostgresStore.open(url);
  if (!opened.ok) throw opened.error;
  closing.push(() => opened.value.close());
  return opened.value;
}

describe.skipIf(noPostgres)("stagechart serve on a PostgreSQL store", () => {
  it("only queues a start; a worker runs it, and the webhook tells its end", async () => {
    const url = await postgres().createDatabase();
    const receiver = await webhookReceiver(SECRET);
    closing.push(() => receiver.close());
    const { root, pipelines } = servedProject();
    const server = await startServeServer({
      store: await openPostgres(url),
      runs: "queued",
      pipelinesDir: pipelines,
      settings: { root, mode: "ask" },
      pollMs: 50,
      webhooks: { urls: [receiver.url], secret: SECRET, attempts: 2, backoffMs: 20 },
    });
    closing.push(() => server.close());
    const started = await fetch(`${server.apiUrl}/runs`, {
      method: "POST",
      body: JSON.stringify({
        pipeline: "code-review",
        task: "rename auth",
        model: "scripted:quick.script.yaml",
      }),
    });
    expect(started.status).toBe(201);
    const { runId, status } = (await started.json()) as { runId: string; status: string };
    expect(status).toBe("queued");
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = (await (await fetch(`${server.apiUrl}/runs/${runId}`)).json()) as {
      status: string;
    };
    expect(before.status).toBe("queued");

    const worker = runWorker({
      store: await openPostgres(url),
      untilIdle: true,
      pollMs: 50,
      cacheDir: tempDir(),
    });
    await worker.done;
    const ended = await receiver.next(runId, "run.ended");
    expect(ended).toMatchObject({ signed: true, body: { status: "done" } });
    const after = (await (await fetch(`${server.apiUrl}/runs/${runId}`)).json()) as {
      status: string;
    };
    expect(after.status).toBe("done");
  });
});
