import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO_ROOT, runCli, withoutColour } from "../support/cli.js";
import { servedProject } from "../support/served-project.js";
import { webhookReceiver } from "../support/webhook-receiver.js";

const BIN = join(REPO_ROOT, "bin/stagechart.js");
const SECRET = "the-cli-tests-webhook-secret";

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

describe("stagechart serve", () => {
  it("serves the API until SIGINT, starts a run, signs its webhook, and never prints the secret", async () => {
    const receiver = await webhookReceiver(SECRET);
    const { root, pipelines } = servedProject();
    const child = spawn(
      process.execPath,
      [BIN, "serve", "--port", "0", "--pipelines", pipelines, "--root", root].concat([
        "--store",
        join(root, "runs.db"),
        "--webhook",
        receiver.url,
      ]),
      {
        env: { ...process.env, STAGECHART_WEBHOOK_SECRET: SECRET },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.push(child);
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    while (!/api\/v1/.test(stdout)) await new Promise((resolve) => setTimeout(resolve, 20));
    const api = /(http:\S+\/api\/v1)/.exec(withoutColour(stdout))?.[1] as string;
    const started = await fetch(`${api}/runs`, {
      method: "POST",
      body: JSON.stringify({
        pipeline: "code-review",
        task: "rename auth",
        model: "scripted:quick.script.yaml",
      }),
    });
    const { runId } = (await started.json()) as { runId: string };
    expect((await receiver.next(runId, "run.ended")).signed).toBe(true);
    child.kill("SIGINT");
    const [code] = await once(child, "exit");
    await receiver.close();
    expect(code).toBe(0);
    expect(stdout + stderr).not.toContain(SECRET);
  });

  it("refuses webhooks without a secret in the environment", async () => {
    const previous = process.env.STAGECHART_WEBHOOK_SECRET;
    delete process.env.STAGECHART_WEBHOOK_SECRET;
    try {
      const refused = await runCli("serve", "--webhook", "http://127.0.0.1:9/hooks");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("Validation/WebhookConfigInvalid");
      expect(refused.stderr).toContain("STAGECHART_WEBHOOK_SECRET");
    } finally {
      if (previous !== undefined) process.env.STAGECHART_WEBHOOK_SECRET = previous;
    }
  });

  it("refuses a webhook URL that is not http", async () => {
    const refused = await runCli("serve", "--webhook", "ftp://example.com/x");
    expect(refused.stderr).toContain("Validation/WebhookConfigInvalid");
  });

  it("runs what it starts with its --max-parallel and --prices, as stagechart run does, kept with each run", async () => {
    const { root, pipelines } = servedProject();
    const prices = join(root, "prices.yaml");
    writeFileSync(prices, "scripted:quick.script.yaml: {input: 3, output: 15}\n");
    const child = spawn(
      process.execPath,
      [BIN, "serve", "--port", "0", "--pipelines", pipelines, "--root", root].concat([
        "--store",
        join(root, "runs.db"),
        "--max-parallel",
        "1",
        "--prices",
        prices,
      ]),
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    children.push(child);
    let stdout = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    while (!/api\/v1/.test(stdout)) await new Promise((resolve) => setTimeout(resolve, 20));
    const api = /(http:\S+\/api\/v1)/.exec(withoutColour(stdout))?.[1] as string;
    const started = await fetch(`${api}/runs`, {
      method: "POST",
      body: JSON.stringify({
        pipeline: "code-review",
        task: "rename auth",
        model: "scripted:quick.script.yaml",
      }),
    });
    const { runId } = (await started.json()) as { runId: string };
    type Shown = {
      status: string;
      options: { maxParallel?: number; prices?: string };
      tokens: { unpricedModels: string[]; total: { inputTokens: number; costUsd: number } };
    };
    let shown: Shown;
    do {
      await new Promise((resolve) => setTimeout(resolve, 50));
      shown = (await (await fetch(`${api}/runs/${runId}`)).json()) as Shown;
    } while (shown.status === "running");
    expect(shown.status).toBe("done");
    expect(shown.options).toMatchObject({ maxParallel: 1, prices });
    expect(shown.tokens.unpricedModels).toEqual([]);
    expect(shown.tokens.total.inputTokens).toBeGreaterThan(0);
    expect(shown.tokens.total.costUsd).toBeGreaterThan(0);
    child.kill("SIGINT");
    await once(child, "exit");
  });

  it("refuses to serve with a price file it cannot read, before anything starts", async () => {
    const { root } = servedProject();
    const prices = join(root, "prices.yaml");
    writeFileSync(prices, "scripted:quick.script.yaml: {input: three, output: 15}\n");
    const refused = await runCli("serve", "--port", "0", "--prices", prices);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("Validation/PriceFileInvalid");
  });
});
