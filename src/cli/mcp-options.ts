import { resolve } from "node:path";
import type { Command } from "commander";
import { ok, type Result } from "../errors.js";
import type { McpServers, McpSources } from "../tools/index.js";
import type { CliIo } from "./io.js";
import { collect } from "./options.js";

export interface McpFlags {
  mcp?: string[];
  mcpConfig?: string[];
}

/** `--mcp` and `--mcp-config`, the same on every command that needs a host's tools. */
export function addMcpOptions(command: Command): Command {
  return command
    .option(
      "--mcp <command>",
      'attach an MCP server: over stdio, "<command>" or "<name>=<command>"; over HTTP, "<name>=<url>" (headers: --mcp-config); its tools are mcp__<name>__<tool>; repeatable',
      collect,
    )
    .option(
      "--mcp-config <file>",
      'attach the MCP servers of a JSON file { "mcpServers": { "<name>": { "command", "args", "env" } or { "url", "headers", "type": "http"|"sse" } } }; header values may read environment variables; repeatable',
      collect,
    );
}

/** Where a command's MCP servers come from, or `undefined` when it has none. */
export function mcpSourcesFor(flags: McpFlags, cwd = process.cwd()): McpSources | undefined {
  const { mcp: commands = [], mcpConfig: configFiles = [] } = flags;
  if (commands.length === 0 && configFiles.length === 0) return undefined;
  return { commands, configFiles: configFiles.map((file) => resolve(cwd, file)), cwd };
}

const NO_SERVERS: McpServers = { tools: [], warnings: [], close: async () => undefined };

/**
 * Starts a command's MCP servers before anything else needs the host's tool names; tools left
 * out are reported on stderr. The caller closes them when it is done, whatever happened.
 */
export async function attachMcpForCli(
  sources: McpSources | undefined,
  io: CliIo,
): Promise<Result<McpServers>> {
  if (!sources) return ok(NO_SERVERS);
  // Loaded only with servers to attach: `validate` without --mcp must not load a host's code.
  const { attachRunMcp } = await import("../runtime/stored-host.js");
  return attachRunMcp(sources, (warning) => io.stderr(`warning: ${warning}\n`));
}
