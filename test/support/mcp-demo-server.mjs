// A small MCP server for the test suite, spoken to over stdio:
//   node test/support/mcp-demo-server.mjs
// or over HTTP on a free port, which it prints (`listening <port>`) on stdout:
//   node test/support/mcp-demo-server.mjs --http          streamable HTTP at /mcp, SSE at /sse
//   node test/support/mcp-demo-server.mjs --http --sse-only   only the older HTTP+SSE transport
// With MCP_DEMO_TOKEN set, every HTTP request must carry `Authorization: Bearer <token>` (401
// otherwise); the log says whether it did, never the token.
// Tools: lookup (read-only), delete (mutating), stats (structured output), slow (honours
// cancellation), broken (answers isError), crash (the process dies mid-call), whoami (echoes the
// Authorization header it was sent over HTTP).
// With MCP_DEMO_LOG set, it appends one line per notable event to that file, so tests can see
// what the server saw (a cancelled call, its own exit). With MCP_DEMO_ENV set, it writes the
// environment it was started with to that file, as JSON.
import { appendFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const log = (line) => {
  if (process.env.MCP_DEMO_LOG) appendFileSync(process.env.MCP_DEMO_LOG, `${line}\n`);
};

if (process.env.MCP_DEMO_ENV) writeFileSync(process.env.MCP_DEMO_ENV, JSON.stringify(process.env));

const TABLE = {
  auth: "src/auth.ts owns login and tokens",
  billing: "src/billing.ts owns invoices",
};

/** The demo server with its tools: one for stdio, one per request or SSE session over HTTP. */
function demoServer() {
  const server = new McpServer({ name: "demo", version: "1.0.0" });

  server.registerTool(
    "lookup",
    {
      description: "Looks up which file owns a concern",
      inputSchema: { key: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ key }) => ({
      content: [{ type: "text", text: TABLE[key] ?? `nothing about ${key}` }],
    }),
  );

  server.registerTool(
    "delete",
    {
      description: "Deletes a record",
      inputSchema: { id: z.string() },
      annotations: { destructiveHint: true },
    },
    async ({ id }) => {
      log(`delete ${id}`);
      return { content: [{ type: "text", text: `deleted ${id}` }] };
    },
  );

  server.registerTool(
    "stats",
    {
      description: "Counts the records",
      inputSchema: {},
      outputSchema: { count: z.number() },
      annotations: { readOnlyHint: true },
    },
    async () => ({
      content: [{ type: "text", text: '{"count":2}' }],
      structuredContent: { count: Object.keys(TABLE).length },
    }),
  );

  server.registerTool(
    "slow",
    {
      description: "Waits, then answers; stops at once when the call is cancelled",
      inputSchema: { ms: z.number() },
      annotations: { readOnlyHint: true },
    },
    ({ ms }, extra) =>
      new Promise((resolve) => {
        log("slow started");
        const timer = setTimeout(() => resolve({ content: [{ type: "text", text: "slept" }] }), ms);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(timer);
          log("slow cancelled");
          resolve({ content: [{ type: "text", text: "cancelled" }] });
        });
      }),
  );

  server.registerTool(
    "whoami",
    {
      description: "Echoes the Authorization header of the request (over HTTP)",
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    async (_args, extra) => ({
      content: [
        {
          type: "text",
          text: `you sent ${extra.requestInfo?.headers?.authorization ?? "nothing"}`,
        },
      ],
    }),
  );

  server.registerTool(
    "broken",
    { description: "Always fails", inputSchema: {}, annotations: { readOnlyHint: true } },
    async () => ({
      isError: true,
      content: [{ type: "text", text: "the lookup table is locked" }],
    }),
  );

  server.registerTool(
    "crash",
    { description: "Kills the server mid-call", inputSchema: {} },
    async () => {
      log("crashing");
      process.exit(7);
    },
  );

  return server;
}

/** Serves the demo server over HTTP on a free port of 127.0.0.1. */
async function serveHttp({ sseOnly }) {
  const token = process.env.MCP_DEMO_TOKEN;
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (token !== undefined) {
      const authorized = req.headers.authorization === `Bearer ${token}`;
      log(`${req.method} ${url.pathname} ${authorized ? "authorized" : "refused"}`);
      if (!authorized) {
        res.writeHead(401).end("unauthorized");
        return;
      }
    }
    if (url.pathname === "/mcp" && !sseOnly) {
      // Stateless: a server and a transport per request, as the SDK shows it.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      const server = demoServer();
      res.on("close", () => {
        transport.close();
        server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
      return;
    }
    if (url.pathname === "/sse" && req.method === "GET") {
      const transport = new SSEServerTransport("/messages", res);
      sessions.set(transport.sessionId, transport);
      res.on("close", () => sessions.delete(transport.sessionId));
      await demoServer().connect(transport);
      return;
    }
    if (url.pathname === "/messages" && req.method === "POST") {
      const transport = sessions.get(url.searchParams.get("sessionId"));
      if (transport) await transport.handlePostMessage(req, res);
      else res.writeHead(404).end("no such session");
      return;
    }
    res.writeHead(sseOnly && url.pathname === "/mcp" ? 405 : 404).end();
  });
  await new Promise((resolve) => http.listen(0, "127.0.0.1", resolve));
  process.stdout.write(`listening ${http.address().port}\n`);
  log("started");
}

process.on("exit", () => log("exited"));
if (process.argv.includes("--http")) {
  await serveHttp({ sseOnly: process.argv.includes("--sse-only") });
} else {
  await demoServer().connect(new StdioServerTransport());
  log("started");
}
