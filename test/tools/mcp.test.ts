import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type AnyTool,
  attachMcpServers,
  invokeTool,
  type McpServers,
  type ToolContext,
} from "../../src/tools/index.js";
import { attached, demoServer, serverLog, untilLogged } from "../support/mcp.js";
import { tempDir } from "../support/stages.js";

const open: McpServers[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((servers) => servers.close()));
});

async function demo(name = "demo") {
  const config = demoServer(name);
  const servers = await attached(config);
  open.push(servers);
  const tool = (short: string): AnyTool => {
    const found = servers.tools.find((t) => t.name === `mcp__${name}__${short}`);
    if (!found) throw new Error(`no tool ${short}`);
    return found;
  };
  return { servers, tool, log: config.log };
}

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const context = (overrides: Partial<ToolContext> = {}): ToolContext => ({
  root: process.cwd(),
  signal: new AbortController().signal,
  limits: { maxOutputBytes: 64 * 1024, timeoutMs: 5000 },
  ...overrides,
});

describe("MCP servers over stdio", () => {
  it("lists every tool of a server as mcp__<server>__<tool>, with the server's schema and read-only hint", async () => {
    const { servers, tool } = await demo();
    expect(servers.tools.map((t) => t.name)).toEqual([
      "mcp__demo__lookup",
      "mcp__demo__delete",
      "mcp__demo__stats",
      "mcp__demo__slow",
      "mcp__demo__whoami",
      "mcp__demo__broken",
      "mcp__demo__crash",
    ]);
    expect(servers.warnings).toEqual([]);
    expect(tool("lookup")).toMatchObject({
      description: "Looks up which file owns a concern",
      inputSchema: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
      mutates: false,
    });
    expect(tool("lookup").inputSchema).not.toHaveProperty("$schema");
    expect(tool("delete").mutates).toBe(true);
    expect(tool("crash").mutates).toBe(true);
  });

  it("summarizes a call as its one argument's value, or as key=value pairs in key order", async () => {
    const { tool } = await demo();
    expect(tool("delete").summarize({ id: "42" })).toBe("42");
    expect(tool("slow").summarize({ ms: 10 })).toBe("10");
    expect(tool("lookup").summarize({ key: "auth", deep: true, at: "x y" })).toBe(
      "at=x y deep=true key=auth",
    );
  });

  it("calls a tool: text becomes the output, structured content is the output when given", async () => {
    const { tool } = await demo();
    expect(await invokeTool(tool("lookup"), { key: "auth" }, context())).toEqual({
      ok: true,
      output: "src/auth.ts owns login and tokens",
    });
    expect(await invokeTool(tool("stats"), {}, context())).toEqual({
      ok: true,
      output: { count: 2 },
    });
  });

  it("checks arguments against the server's schema before calling it", async () => {
    const { tool } = await demo();
    const outcome = await invokeTool(tool("lookup"), { key: 3 }, context());
    expect(outcome.ok ? undefined : outcome.error.code).toBe("ToolTerminal/InvalidToolInput");
  });

  it("turns an isError answer into ToolTerminal/McpToolError carrying the server's text", async () => {
    const { tool } = await demo();
    const outcome = await invokeTool(tool("broken"), {}, context());
    expect(outcome.ok ? undefined : outcome.error.toModelView()).toMatchObject({
      code: "ToolTerminal/McpToolError",
      message: "the lookup table is locked",
      context: { tool: "mcp__demo__broken", server: "demo", serverTool: "broken" },
    });
  });

  it("turns a server that dies mid-call, and every later call, into ToolTransient/McpServerUnavailable", async () => {
    const { tool, log } = await demo();
    const during = await invokeTool(tool("crash"), {}, context());
    expect(during.ok ? undefined : during.error.code).toBe("ToolTransient/McpServerUnavailable");
    expect(during.ok ? "" : during.error.message).toContain('MCP server "demo"');
    const after = await invokeTool(tool("lookup"), { key: "auth" }, context());
    expect(after.ok ? undefined : after.error.toModelView()).toMatchObject({
      code: "ToolTransient/McpServerUnavailable",
      message: expect.stringContaining("exited or crashed"),
    });
    expect(serverLog(log)).toContain("crashing");
  });

  it("cancels a slow call when the signal aborts, and the server sees the cancellation", async () => {
    const { tool, log } = await demo();
    const controller = new AbortController();
    const call = invokeTool(tool("slow"), { ms: 10_000 }, context({ signal: controller.signal }));
    await untilLogged(log, "slow started");
    controller.abort();
    const outcome = await call;
    expect(outcome.ok ? undefined : outcome.error.code).toBe("Cancellation/StageCancelled");
    await untilLogged(log, "slow cancelled");
  });

  it("stops a call that runs past the host's tool timeout", async () => {
    const { tool, log } = await demo();
    const limits = { maxOutputBytes: 1024, timeoutMs: 200 };
    const outcome = await invokeTool(tool("slow"), { ms: 10_000 }, context({ limits }));
    expect(outcome.ok ? undefined : outcome.error.code).toBe("ToolTransient/ToolTimeout");
    await untilLogged(log, "slow cancelled");
  });

  it("stops every server process on close", async () => {
    const first = demoServer("one");
    const second = demoServer("two");
    const servers = await attached(first, second);
    expect(servers.tools.filter((t) => t.name.endsWith("__lookup")).map((t) => t.name)).toEqual([
      "mcp__one__lookup",
      "mcp__two__lookup",
    ]);
    await servers.close();
    expect(serverLog(first.log)).toEqual(["started", "exited"]);
    expect(serverLog(second.log)).toEqual(["started", "exited"]);
  });

  it("refuses a server that cannot start, naming it and its command, and stops the others", async () => {
    const good = demoServer("good");
    const missing = { name: "ghost", command: "no-such-mcp-server-binary", args: [], cwd: "." };
    const result = await attachMcpServers([good, missing]);
    expect(result.ok ? undefined : result.error.toModelView()).toMatchObject({
      code: "ExtensionHost/McpServerStartFailed",
      message: expect.stringContaining(
        'MCP server "ghost" (no-such-mcp-server-binary) did not start',
      ),
      context: { server: "ghost", command: "no-such-mcp-server-binary" },
    });
    await untilLogged(good.log, "exited");
  });

  it("refuses a server that exits before it answers, with the end of its stderr", async () => {
    const dies = {
      name: "dies",
      command: process.execPath,
      args: ["-e", "console.error('config missing: API_TOKEN'); process.exit(3)"],
      cwd: ".",
    };
    const result = await attachMcpServers([dies]);
    expect(result.ok ? undefined : result.error.toModelView()).toMatchObject({
      code: "ExtensionHost/McpServerStartFailed",
      message: expect.stringContaining("config missing: API_TOKEN"),
    });
  });

  it("refuses a server that does not answer in time, and leaves no process behind", async () => {
    const pidFile = join(tempDir(), "pid");
    const silent = {
      name: "silent",
      command: process.execPath,
      args: [
        "-e",
        "require('fs').writeFileSync(process.env.PID_FILE, String(process.pid)); setInterval(() => {}, 1000)",
      ],
      env: { PID_FILE: pidFile },
      cwd: ".",
    };
    // Long enough for the server's process to have started (and said its pid) on a loaded
    // machine: 300 ms could end before Node wrote the file, leaving nothing to check.
    const result = await attachMcpServers([silent], { startTimeoutMs: 2_000 });
    expect(result.ok ? undefined : result.error.code).toBe("ExtensionHost/McpServerStartFailed");
    const pid = Number(readFileSync(pidFile, "utf8"));
    await expect.poll(() => isRunning(pid), { timeout: 2000, interval: 20 }).toBe(false);
  });
});

describe("an MCP server's environment", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  /** Starts the demo server with `env` added to its config; what it saw of the environment. */
  async function environmentSeen(env: Record<string, string>): Promise<Record<string, string>> {
    const file = join(tempDir(), "env.json");
    const config = demoServer();
    open.push(await attached({ ...config, env: { ...config.env, ...env, MCP_DEMO_ENV: file } }));
    return JSON.parse(readFileSync(file, "utf8"));
  }

  it("holds none of the provider keys stagechart was started with", async () => {
    vi.stubEnv("OPENAI_API_KEY", "sk-canary-mcp-1");
    vi.stubEnv("ANTHROPIC_API_KEY", "sk-canary-mcp-2");
    vi.stubEnv("OPENAI_COMPATIBLE_API_KEY", "sk-canary-mcp-3");
    const seen = await environmentSeen({});
    expect(seen.PATH).toBe(process.env.PATH);
    expect(JSON.stringify(seen)).not.toContain("sk-canary-mcp");
  });

  it("holds a key the server's config names explicitly", async () => {
    vi.stubEnv("OPENAI_API_KEY", "sk-canary-mcp-1");
    const seen = await environmentSeen({ OPENAI_API_KEY: "sk-the-servers-own" });
    expect(seen.OPENAI_API_KEY).toBe("sk-the-servers-own");
  });
});
