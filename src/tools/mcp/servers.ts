import { compileSchema } from "../../definitions/json-schema.js";
import { err, ok, type Result } from "../../errors.js";
import type { AnyTool } from "../types.js";
import type { McpServerConfig } from "./config.js";
import type { McpConnection } from "./connection.js";
import { mcpToolName } from "./naming.js";

/** The MCP servers of a run, started, with their tools ready for the host. */
export interface McpServers {
  /** Every usable tool of every server, named `mcp__<server>__<tool>`. */
  tools: AnyTool[];
  /** Tools left out, and why (a name too long for providers, a schema that does not compile). */
  warnings: string[];
  /** Stops every server; waits until their processes are gone. */
  close(): Promise<void>;
}

export interface AttachOptions {
  /** How long a server may take to start and list its tools. */
  startTimeoutMs?: number;
}

export const DEFAULT_MCP_START_TIMEOUT_MS = 30_000;

/**
 * Starts every server (together) and wraps their tools. If any server fails to start, the others
 * are stopped and the first failure, in the order given, is the result: a run never starts with
 * part of its tools.
 */
export async function attachMcpServers(
  configs: readonly McpServerConfig[],
  options: AttachOptions = {},
): Promise<Result<McpServers>> {
  const timeout = options.startTimeoutMs ?? DEFAULT_MCP_START_TIMEOUT_MS;
  // The MCP client is loaded only when a server is to be started: most commands start none.
  const [{ connectMcpServer }, wrapping] = await Promise.all([
    import("./connection.js"),
    import("./tool.js"),
  ]);
  const started = await Promise.all(configs.map((config) => connectMcpServer(config, timeout)));
  const connections = started.flatMap((result) => (result.ok ? [result.value] : []));
  const close = async () => {
    await Promise.all(connections.map((connection) => connection.close()));
  };
  const failed = started.find((result) => !result.ok);
  if (failed && !failed.ok) {
    await close();
    return err(failed.error);
  }
  const tools: AnyTool[] = [];
  const warnings: string[] = [];
  for (const connection of connections) {
    for (const definition of connection.tools) {
      const refused = hostToolFor(connection, definition, tools, wrapping);
      if (typeof refused === "string") warnings.push(refused);
      else tools.push(refused);
    }
  }
  return ok({ tools, warnings, close });
}

/** The host tool for a listed tool, or why it cannot be offered. */
function hostToolFor(
  connection: McpConnection,
  definition: McpConnection["tools"][number],
  taken: readonly AnyTool[],
  { inputSchemaOf, wrapMcpTool }: typeof import("./tool.js"),
): AnyTool | string {
  const where = `MCP server "${connection.config.name}": tool "${definition.name}" is left out`;
  const name = mcpToolName(connection.config.name, definition.name);
  if (name === undefined) return `${where}: its name would be longer than 64 characters`;
  if (taken.some((tool) => tool.name === name)) {
    return `${where}: another of its tools is also offered as ${name}`;
  }
  // The schema object compiled here is the tool's own, so Ajv's cache serves its calls.
  const inputSchema = inputSchemaOf(definition);
  const compiled = compileSchema(inputSchema);
  if (!compiled.ok) {
    const problems = compiled.error.map((p) => `${p.path.join(".") || "(root)"} ${p.message}`);
    return `${where}: its input schema does not compile (${problems.join("; ")})`;
  }
  return wrapMcpTool(connection, definition, name, inputSchema);
}
