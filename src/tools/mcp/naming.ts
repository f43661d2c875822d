/**
 * MCP tools join the host as `mcp__<server>__<tool>`. Tool names must suit every model provider
 * (`[A-Za-z0-9_-]`, at most 64 characters), so a server's tool name is kept when it fits and its
 * other characters become `_`.
 */
const MCP_TOOL_PREFIX = "mcp__";

/** A server name people write (`name=command`, a config file key): letters, digits, `_`, `-`. */
export const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;

const MAX_TOOL_NAME = 64;

/** The host's name for a server's tool, or `undefined` when it would be too long for providers. */
export function mcpToolName(server: string, tool: string): string | undefined {
  const name = `${MCP_TOOL_PREFIX}${server}__${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  return name.length <= MAX_TOOL_NAME ? name : undefined;
}

/** A server name made from any text: invalid characters become `-`, at most 32 characters. */
export function toServerName(text: string): string {
  const cleaned = text
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/^[-_]+|-+$/g, "")
    .slice(0, 32);
  return cleaned === "" ? "mcp" : cleaned;
}
