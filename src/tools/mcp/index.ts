/**
 * MCP servers over stdio, their tools offered by the host as `mcp__<server>__<tool>`.
 *
 * | code | when |
 * |---|---|
 * | `Validation/McpConfigInvalid` | a `--mcp` value without a command or with an unclosed quote; a config file that cannot be read, is not JSON, or lacks `mcpServers.<name>.command` |
 * | `Validation/McpServerNameInvalid` | a server name outside `[A-Za-z0-9_-]` (1–32, not starting with `_` or `-`), or two servers with one name |
 * | `ExtensionHost/McpServerStartFailed` | a server that cannot be spawned or reached (over HTTP: refused, or it refused the headers), exits, or does not initialize and list its tools in time |
 * | `ToolTerminal/McpToolError` | the server answered the call with `isError` (its text is the message) |
 * | `ToolTerminal/McpProtocolError` | the server refused the request itself (a JSON-RPC error) |
 * | `ToolTransient/McpServerUnavailable` | the server exited or the connection broke, before or during the call |
 * | `ToolTransient/ToolTimeout`, `Cancellation/StageCancelled` | as for every tool |
 */
export type { McpHttpServer, McpServerConfig, McpSources, McpStdioServer } from "./config.js";
export { loadMcpConfigFile, parseMcpFlag, resolveMcpServers } from "./config.js";
export { mcpToolName } from "./naming.js";
export {
  type AttachOptions,
  attachMcpServers,
  DEFAULT_MCP_START_TIMEOUT_MS,
  type McpServers,
} from "./servers.js";
