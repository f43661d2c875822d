import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, expect } from "vitest";
import {
  attachMcpServers,
  type McpServerConfig,
  type McpServers,
  type McpStdioServer,
} from "../../src/tools/index.js";
import { tempDir } from "./stages.js";

/** The test suite's MCP server (lookup, delete, stats, slow, broken, crash), run with node. */
export const DEMO_SERVER = resolve(import.meta.dirname, "mcp-demo-server.mjs");

/** The demo server as a config, logging what it sees to a fresh file. */
export function demoServer(name = "demo"): McpStdioServer & { log: string } {
  const log = join(tempDir(), "server.log");
  return {
    name,
    command: process.execPath,
    args: [DEMO_SERVER],
    env: { MCP_DEMO_LOG: log },
    cwd: process.cwd(),
    log,
  };
}

/** The lines the demo server logged (`started`, `slow cancelled`, `exited`, …). */
export const serverLog = (log: string): string[] =>
  existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : [];

export async function attached(...configs: McpServerConfig[]): Promise<McpServers> {
  const servers = await attachMcpServers(configs);
  if (!servers.ok) throw servers.error;
  return servers.value;
}

/** Waits until the demo server has logged `line` (its log is written by another process). */
export async function untilLogged(log: string, line: string): Promise<void> {
  await expect.poll(() => serverLog(log), { timeout: 5000, interval: 20 }).toContain(line);
}

/** The demo server serving HTTP (see mcp-demo-server.mjs), on a free port of 127.0.0.1. */
export interface HttpDemoServer {
  /** Its streamable HTTP endpoint (`/mcp`); the SSE one is `/sse`. */
  url: string;
  sseUrl: string;
  log: string;
  stop(): void;
}

const httpServers: ChildProcess[] = [];
afterEach(() => {
  for (const child of httpServers.splice(0)) child.kill();
});

/** Starts the demo server over HTTP, requiring `Bearer <token>` when given; stopped after the test. */
export async function httpDemoServer(
  options: { token?: string; sseOnly?: boolean } = {},
): Promise<HttpDemoServer> {
  const log = join(tempDir(), "server.log");
  const child = spawn(
    process.execPath,
    [DEMO_SERVER, "--http", ...(options.sseOnly ? ["--sse-only"] : [])],
    {
      env: {
        ...process.env,
        MCP_DEMO_LOG: log,
        ...(options.token !== undefined && { MCP_DEMO_TOKEN: options.token }),
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  httpServers.push(child);
  const port = await new Promise<number>((resolvePort, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const listening = /listening (\d+)/.exec(out);
      if (listening) resolvePort(Number(listening[1]));
    });
    child.on("exit", (code) => reject(new Error(`the demo server exited (${code})`)));
  });
  const base = `http://127.0.0.1:${port}`;
  return { url: `${base}/mcp`, sseUrl: `${base}/sse`, log, stop: () => child.kill() };
}
