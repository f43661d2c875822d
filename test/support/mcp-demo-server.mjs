// A small MCP server for the test suite, spoken to over stdio:
//   node test/support/mcp-demo-server.mjs
// Tools: lookup (read-only), delete (mutating), stats (structured output), slow (honours
// cancellation), broken (answers isError), crash (the process dies mid-call).
// With MCP_DEMO_LOG set, it appends one line per notable event to that file, so tests can see
// what the server saw (a cancelled call, its own exit). With MCP_DEMO_ENV set, it writes the
// environment it was started with to that file, as JSON.
import { appendFileSync, writeFileSync } from "node:fs";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const log = (line) => {
  if (process.env.MCP_DEMO_LOG) appendFileSync(process.env.MCP_DEMO_LOG, `${line}\n`);
};

if (process.env.MCP_DEMO_ENV) writeFileSync(process.env.MCP_DEMO_ENV, JSON.stringify(process.env));

const TABLE = {
  auth: "src/auth.ts owns login and tokens",
  billing: "src/billing.ts owns invoices",
};

const server = new McpServer({ name: "demo", version: "1.0.0" });

server.registerTool(
  "lookup",
  {
    description: "Looks up which file owns a concern",
    inputSchema: { key: z.string() },
    annotations: { readOnlyHint: true },
  },
  async ({ key }) => ({ content: [{ type: "text", text: TABLE[key] ?? `nothing about ${key}` }] }),
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
  "broken",
  { description: "Always fails", inputSchema: {}, annotations: { readOnlyHint: true } },
  async () => ({ isError: true, content: [{ type: "text", text: "the lookup table is locked" }] }),
);

server.registerTool(
  "crash",
  { description: "Kills the server mid-call", inputSchema: {} },
  async () => {
    log("crashing");
    process.exit(7);
  },
);

process.on("exit", () => log("exited"));
await server.connect(new StdioServerTransport());
log("started");
