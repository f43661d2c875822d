import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { hostFor, settingsFor } from "../../src/cli/host-options.js";
import { loadPipelineFile } from "../../src/definitions/index.js";
import { startRun } from "../../src/runtime/run.js";
import { SqliteStore } from "../../src/store/index.js";
import { BUILTIN_TOOL_NAMES } from "../../src/tools/index.js";
import { runCli } from "../support/cli.js";
import { attached, DEMO_SERVER, demoServer, httpDemoServer, serverLog } from "../support/mcp.js";
import { project } from "../support/pipeline-files.js";
import { seedPlan } from "../support/stages.js";

const PIPELINE = `id: lookup
context:
  type: object
  required: [task]
  properties: { task: { type: string } }
entry: plan
stages:
  plan: { file: ../stages/plan.md }
`;

const LOOKUP_THEN_SUBMIT = `stages:
  plan:
    - tool: mcp__demo__lookup
      args: { key: auth }
    - tool: submit_plan
      args: { summary: "auth lives in src/auth.ts", steps: ["read it"] }
`;

/** A project whose Plan stage may call the demo server's lookup; its pipeline is machines/lookup.yaml. */
function lookupProject(script = LOOKUP_THEN_SUBMIT) {
  const dir = project({
    "stages/plan.md": seedPlan.replace(
      /^allowedTools: .*$/m,
      'allowedTools: ["Read", "mcp__demo__lookup"]',
    ),
    "machines/lookup.yaml": PIPELINE,
    "machines/lookup.script.yaml": script,
  });
  const store = join(dir, ".stagechart/runs.db");
  return {
    dir,
    store,
    pipeline: join(dir, "machines/lookup.yaml"),
    run: (...argv: string[]) =>
      runCli(
        "run",
        join(dir, "machines/lookup.yaml"),
        "--task",
        "find auth",
        "--headless",
        "--root",
        dir,
        "--store",
        store,
        ...argv,
      ),
  };
}

const BIN = resolve(import.meta.dirname, "../../bin/stagechart.js");

const DEMO_COMMAND = `demo=${JSON.stringify(process.execPath)} ${JSON.stringify(DEMO_SERVER)}`;

/** The demo server in a config file, logging to its own file. */
function demoConfig(dir: string) {
  const server = demoServer();
  const file = join(dir, "mcp.json");
  writeFileSync(
    file,
    JSON.stringify({
      mcpServers: { demo: { command: server.command, args: server.args, env: server.env } },
    }),
  );
  return { file, log: server.log };
}

const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split("\n").at(-1) as string);

async function auditOf(store: string, runId: string) {
  const audit = await runCli("audit", runId, "--store", store, "--json");
  return JSON.parse(audit.stdout) as { type: string; payload: Record<string, unknown> }[];
}

describe("stagechart run --mcp", () => {
  it("attaches a server whose tool a stage calls through its envelope, to done", async () => {
    const p = lookupProject();
    const run = await p.run("--mcp", DEMO_COMMAND, "--json");
    expect(run.code).toBe(0);
    const summary = summaryOf(run.stdout);
    expect(summary.status).toBe("done");
    expect(run.stderr).toContain("plan   mcp__demo__lookup(auth) approved (envelope)");
    expect(run.stderr).toContain("plan   mcp__demo__lookup(auth) ok");
    const succeeded = (await auditOf(p.store, summary.runId)).find(
      (e) => e.type === "ToolSucceeded",
    );
    expect(succeeded?.payload).toMatchObject({ tool: "mcp__demo__lookup", argsSummary: "auth" });
  });

  it("calls the tool of a server over HTTP, its auth header from the environment and nowhere in the run's record", async () => {
    const token = "http-demo-token-0c4e81d2";
    const server = await httpDemoServer({ token });
    const p = lookupProject();
    const file = join(p.dir, "mcp.json");
    const header = ["Bearer $", "{DEMO_MCP_TOKEN}"].join("");
    writeFileSync(
      file,
      JSON.stringify({
        mcpServers: { demo: { url: server.url, headers: { Authorization: header } } },
      }),
    );
    process.env.DEMO_MCP_TOKEN = token;
    let run: Awaited<ReturnType<typeof p.run>>;
    try {
      run = await p.run("--mcp-config", file, "--json");
    } finally {
      delete process.env.DEMO_MCP_TOKEN;
    }
    expect(run.code).toBe(0);
    const summary = summaryOf(run.stdout);
    expect(summary.status).toBe("done");
    expect(run.stderr).toContain("plan   mcp__demo__lookup(auth) ok");
    expect(serverLog(server.log)).toContain("POST /mcp authorized");
    const audit = await auditOf(p.store, summary.runId);
    expect(audit.find((e) => e.type === "ToolSucceeded")?.payload).toMatchObject({
      tool: "mcp__demo__lookup",
    });
    const shown = await runCli("show", summary.runId, "--store", p.store, "--json");
    for (const text of [run.stdout, run.stderr, JSON.stringify(audit), shown.stdout])
      expect(text).not.toContain(token);
    for (const stored of [p.store, `${p.store}-wal`].filter((path) => existsSync(path)))
      expect(readFileSync(stored).includes(token)).toBe(false);
  });

  it("refuses a pipeline naming MCP tools when their server is not attached", async () => {
    const run = await lookupProject().run("--json");
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/Validation\/UnknownTool allowedTools names "mcp__demo__lookup"/);
  });

  it("refuses to start when a server cannot start, naming the server and its command", async () => {
    const run = await lookupProject().run("--mcp", "demo=no-such-mcp-server --stdio", "--json");
    expect(run.code).toBe(1);
    expect(summaryOf(run.stdout).error).toMatchObject({
      code: "ExtensionHost/McpServerStartFailed",
      message: expect.stringContaining(
        'MCP server "demo" (no-such-mcp-server --stdio) did not start',
      ),
    });
  });

  it("takes servers from --mcp-config, stores where they came from, and stops them when the run ends", async () => {
    const p = lookupProject();
    const config = demoConfig(p.dir);
    const run = await p.run("--mcp-config", config.file, "--json");
    expect(summaryOf(run.stdout).status).toBe("done");
    expect(serverLog(config.log)).toEqual(["started", "exited"]);
    const store = SqliteStore.open(p.store);
    if (!store.ok) throw store.error;
    const stored = store.value.getRun(summaryOf(run.stdout).runId);
    store.value.close();
    expect(stored.ok && stored.value.options.mcp).toEqual({
      commands: [],
      configFiles: [config.file],
      cwd: process.cwd(),
    });
  });

  it("stops its servers when the run fails too", async () => {
    const p = lookupProject("stages:\n  plan:\n    - { error: bad request, status: 400 }\n");
    const config = demoConfig(p.dir);
    const run = await p.run("--mcp-config", config.file, "--json");
    expect(summaryOf(run.stdout).status).toBe("failed");
    expect(serverLog(config.log)).toEqual(["started", "exited"]);
  });
});

describe("the installed binary with --mcp-config", () => {
  it("runs to done and exits promptly, leaving no server behind", () => {
    const p = lookupProject();
    const config = demoConfig(p.dir);
    const out = execFileSync(
      process.execPath,
      [BIN, "run", p.pipeline, "--task", "t", "--headless", "--json", "--mcp-config", config.file],
      { cwd: p.dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 15_000 },
    );
    expect(summaryOf(out).status).toBe("done");
    expect(serverLog(config.log)).toEqual(["started", "exited"]);
  });
});

describe("stagechart resume of a run with MCP servers", () => {
  it("starts the run's servers again and goes on calling their tools", async () => {
    const p = lookupProject(`stages:
  plan:
    - tool: mcp__demo__lookup
      args: { key: auth }
    - { delayMs: 600, tool: mcp__demo__lookup, args: { key: billing } }
    - tool: submit_plan
      args: { summary: "found both", steps: ["read them"] }
`);
    const config = demoConfig(p.dir);
    const settings = settingsFor({
      pipelineFile: p.pipeline,
      root: p.dir,
      mode: "ask",
      headless: true,
      mcp: { commands: [], configFiles: [config.file], cwd: process.cwd() },
    });
    const servers = await attached({ ...demoServer(), env: { MCP_DEMO_LOG: config.log } });
    const toolNames = [...BUILTIN_TOOL_NAMES, ...servers.tools.map((t) => t.name)];
    const pipeline = await loadPipelineFile(p.pipeline, { toolNames });
    const host = await hostFor(settings, { extraTools: servers.tools });
    const store = SqliteStore.open(p.store);
    if (!pipeline.ok || !host.ok || !store.ok) throw new Error("setup failed");
    const first = await startRun(pipeline.value, {
      host: host.value,
      store: store.value,
      resumeWith: { ...settings },
      runId: "r-mcp",
      task: "find auth",
    });
    if (!first.ok) throw first.error;
    await expect
      .poll(() => store.value.auditOf("r-mcp").some((e) => e.type === "ToolSucceeded"))
      .toBe(true);
    first.value.stop();
    expect((await first.value.result).status).toBe("suspended");
    await servers.close();
    store.value.close();

    const resumed = await runCli("resume", "r-mcp", "--store", p.store, "--json");
    expect(summaryOf(resumed.stdout).status).toBe("done");
    const lookups = (await auditOf(p.store, "r-mcp"))
      .filter((e) => e.type === "ToolSucceeded")
      .map((e) => e.payload.argsSummary);
    expect(lookups).toEqual(["auth", "billing"]);
    expect(serverLog(config.log)).toEqual(["started", "exited", "started", "exited"]);
  });
});

describe("stagechart validate --mcp", () => {
  it("checks allowedTools against the attached servers' tools", async () => {
    const p = lookupProject();
    const without = await runCli("validate", p.pipeline);
    expect(without.code).toBe(1);
    expect(without.stdout).toContain("Validation/UnknownTool");
    const withServer = await runCli("validate", p.pipeline, "--mcp", DEMO_COMMAND);
    expect(withServer.stdout).not.toContain("Validation/UnknownTool");
    expect(withServer.code).toBe(0);
  });
});
