import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  attachMcpServers,
  invokeTool,
  loadMcpConfigFile,
  type McpServers,
  type ToolContext,
} from "../../src/tools/index.js";
import { httpDemoServer, serverLog } from "../support/mcp.js";
import { tempDir } from "../support/stages.js";

const TOKEN = "demo-token-5f2c9a7e";

const open: McpServers[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((servers) => servers.close()));
});

const context = (): ToolContext => ({
  root: process.cwd(),
  signal: new AbortController().signal,
  limits: { maxOutputBytes: 64 * 1024, timeoutMs: 5000 },
});

async function attachedHttp(url: string, headers?: Record<string, string>, transport = "auto") {
  const servers = await attachMcpServers([
    { name: "demo", url, transport: transport as "auto", ...(headers && { headers }) },
  ]);
  if (servers.ok) open.push(servers.value);
  return servers;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("MCP servers over HTTP", () => {
  it("calls a streamable HTTP server's tool, with the auth header on every request", async () => {
    const server = await httpDemoServer({ token: TOKEN });
    const servers = await attachedHttp(server.url, { Authorization: `Bearer ${TOKEN}` });
    if (!servers.ok) throw servers.error;
    const lookup = servers.value.tools.find((tool) => tool.name === "mcp__demo__lookup");
    if (!lookup) throw new Error("no lookup tool");
    expect(lookup.mutates).toBe(false);
    expect(await invokeTool(lookup, { key: "auth" }, context())).toEqual({
      ok: true,
      output: "src/auth.ts owns login and tokens",
    });
    const log = serverLog(server.log);
    expect(log).toContain("POST /mcp authorized");
    expect(log.filter((line) => line.includes("refused"))).toEqual([]);
  });

  it("keeps a header's value out of what a tool answers, should the server echo it", async () => {
    const server = await httpDemoServer({ token: TOKEN });
    const servers = await attachedHttp(server.url, { Authorization: `Bearer ${TOKEN}` });
    if (!servers.ok) throw servers.error;
    const whoami = servers.value.tools.find((tool) => tool.name === "mcp__demo__whoami");
    if (!whoami) throw new Error("no whoami tool");
    expect(await invokeTool(whoami, {}, context())).toEqual({
      ok: true,
      output: "you sent [redacted]",
    });
  });

  it("falls back to HTTP+SSE for a server that only speaks that", async () => {
    const server = await httpDemoServer({ token: TOKEN, sseOnly: true });
    const servers = await attachedHttp(server.sseUrl, { Authorization: `Bearer ${TOKEN}` });
    if (!servers.ok) throw servers.error;
    const lookup = servers.value.tools.find((tool) => tool.name === "mcp__demo__lookup");
    if (!lookup) throw new Error("no lookup tool");
    expect(await invokeTool(lookup, { key: "billing" }, context())).toMatchObject({
      ok: true,
      output: "src/billing.ts owns invoices",
    });
    expect(serverLog(server.log)).toContain("GET /sse authorized");
    // Named, the transport is used alone: streamable HTTP is then refused by this server.
    const only = await attachedHttp(
      server.sseUrl,
      { Authorization: `Bearer ${TOKEN}` },
      "streamable-http",
    );
    expect(only.ok ? undefined : only.error.code).toBe("ExtensionHost/McpServerStartFailed");
  });

  it("refuses to attach a server that refuses the headers, naming it without the secret", async () => {
    const server = await httpDemoServer({ token: TOKEN });
    const wrong = `Bearer ${TOKEN}-wrong`;
    const servers = await attachedHttp(server.url, { Authorization: wrong });
    if (servers.ok) throw new Error("attached with the wrong token");
    expect(servers.error.code).toBe("ExtensionHost/McpServerStartFailed");
    expect(servers.error.message).toContain(
      `MCP server "demo" (${server.url}) could not be reached`,
    );
    expect(JSON.stringify([servers.error.message, servers.error.context])).not.toContain(TOKEN);
  });

  it("reports an unreachable URL as a coded error, at once", async () => {
    const url = `http://127.0.0.1:${await closedPort()}/mcp`;
    const servers = await attachedHttp(url);
    if (servers.ok) throw new Error("attached to nothing");
    expect(servers.error).toMatchObject({
      code: "ExtensionHost/McpServerStartFailed",
      context: { server: "demo", command: url },
    });
  });

  it("reads url, headers and type from a config file, headers from the environment's variables", async () => {
    const file = join(tempDir(), "mcp.json");
    writeFileSync(
      file,
      JSON.stringify({
        mcpServers: {
          docs: {
            type: "sse",
            url: "https://docs.example/sse",
            // The file names the variable as `${DOCS_TOKEN}`: the secret is not in it.
            headers: { Authorization: `Bearer ${"$"}{DOCS_TOKEN}` },
          },
          api: { url: "https://api.example/mcp" },
        },
      }),
    );
    const loaded = await loadMcpConfigFile(file, "/", { DOCS_TOKEN: TOKEN });
    expect(loaded.ok && loaded.value).toEqual([
      {
        name: "docs",
        url: "https://docs.example/sse",
        headers: { Authorization: `Bearer ${TOKEN}` },
        transport: "sse",
      },
      { name: "api", url: "https://api.example/mcp", transport: "auto" },
    ]);
    const unset = await loadMcpConfigFile(file, "/", {});
    expect(unset.ok ? undefined : unset.error).toMatchObject({
      code: "Validation/McpConfigInvalid",
      message: expect.stringContaining("DOCS_TOKEN, which is not set"),
    });
  });
});
