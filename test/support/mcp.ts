import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { expect } from "vitest";
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
