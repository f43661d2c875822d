/**
 * The built-in tools and the one way to call a tool.
 *
 * Error codes a tool call can end with:
 *
 * | code | when |
 * |---|---|
 * | `ToolTerminal/InvalidToolInput` | arguments fail the tool's schema; an invalid regex; an Edit whose old and new are equal; a Read offset past the end |
 * | `ToolTerminal/InvalidToolSchema` | the tool's own input schema does not compile (a bug in the tool) |
 * | `ToolTerminal/SandboxEscape` | a path or pattern that is absolute, climbs out with `..`, resolves through a link to outside the root, contains NUL, or cannot be resolved; a file or directory replaced by a link between its check and its opening |
 * | `ToolTerminal/FileNotFound` | the path does not exist |
 * | `ToolTerminal/IsDirectory` | a file was expected (Read, Edit, Write) |
 * | `ToolTerminal/NotARegularFile` | a FIFO, socket or device given to Read, Edit, Write or Grep (walks skip them) |
 * | `ToolTerminal/NotADirectory` | a directory was expected (Glob's path, a Write parent that is a file) |
 * | `ToolTerminal/BinaryFile` | Read or Edit of a file with NUL bytes or that is not UTF-8 |
 * | `ToolTerminal/FileTooLarge` | Read or Edit of a file over 10 MiB |
 * | `ToolTerminal/PermissionDenied` | the operating system refused access |
 * | `ToolTerminal/FileSystemError` | any other file-system failure |
 * | `ToolTerminal/EditNoMatch` | Edit's `old` does not occur (and the edit is not already applied) |
 * | `ToolTerminal/EditAmbiguous` | Edit's `old` occurs more than once without `replaceAll` |
 * | `ToolTerminal/SpawnFailed` | Bash, or its sandbox, could not start (a non-zero exit is a result, not an error) |
 * | `ToolTerminal/SandboxUnavailable` | Bash where bubblewrap cannot run (not installed, or no user namespaces), unless the host allows unconfined Bash |
 * | `ToolTerminal/ToolCrashed` | the tool threw, or returned something that is not an outcome |
 * | `ToolTransient/ToolTimeout` | the call ran past `limits.timeoutMs` (or Bash's own `timeoutMs`) |
 * | `Cancellation/StageCancelled` | the context's signal aborted before the call finished |
 *
 * MCP tools add their own codes (`./mcp/index.ts`).
 */
import { bashTool } from "./bash.js";
import { editTool } from "./edit.js";
import { globTool } from "./glob.js";
import { grepTool } from "./grep.js";
import { readTool } from "./read.js";
import type { AnyTool } from "./types.js";
import { writeTool } from "./write.js";

export { BUILTIN_TOOL_NAMES } from "../definitions/pipeline-loader.js";
export { invokeTool } from "./invoke.js";
export * from "./mcp/index.js";
export { resolveInRoot } from "./sandbox.js";
export * from "./types.js";

/** A fresh list of the built-in tools, to register with a host. */
export function builtinTools(): AnyTool[] {
  return [readTool, grepTool, globTool, editTool, writeTool, bashTool];
}
