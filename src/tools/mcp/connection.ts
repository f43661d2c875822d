import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Tool as McpToolDefinition } from "@modelcontextprotocol/sdk/types.js";
import { err, ok, type Result, StagechartError } from "../../errors.js";
import { VERSION } from "../../version.js";
import type { McpServerConfig } from "./config.js";

/** A started MCP server: its client, the tools it listed, and whether it is still there. */
export interface McpConnection {
  config: McpServerConfig;
  client: Client;
  tools: McpToolDefinition[];
  /** Why the server is gone, once it is (it exited, or the connection broke). */
  lost(): string | undefined;
  /** The last lines the server wrote to stderr, for error messages. */
  stderrTail(): string;
  close(): Promise<void>;
}

const STDERR_TAIL_CHARS = 2000;

/** The command line of a server, for messages. */
export const commandText = ({ command, args }: McpServerConfig): string =>
  [command, ...args].map((word) => (/[\s"'\\]/.test(word) ? JSON.stringify(word) : word)).join(" ");

/**
 * Starts a server over stdio, initializes the session and lists every tool (all pages). Anything
 * that goes wrong on the way is `ExtensionHost/McpServerStartFailed` naming the server and its
 * command, with the end of its stderr; the process is stopped again.
 */
export async function connectMcpServer(
  config: McpServerConfig,
  startTimeoutMs: number,
): Promise<Result<McpConnection>> {
  const transport = new TrackedTransport({
    command: config.command,
    args: config.args,
    cwd: config.cwd,
    stderr: "pipe",
    ...(config.env && { env: config.env }),
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
  });
  const stderrTail = () => stderr.trim();
  const client = new Client({ name: "stagechart", version: VERSION });
  let lostBecause: string | undefined;
  let lastError: string | undefined;
  let closing = false;
  client.onclose = () => {
    if (closing) return;
    lostBecause = `the server closed the connection (it exited or crashed)${lastError ? `; last error: ${lastError}` : ""}`;
  };
  // Errors that do not close the connection (a stray line on stdout) only explain a later loss.
  client.onerror = (error) => {
    lastError = error.message;
  };
  const close = async () => {
    closing = true;
    await client.close().catch(() => undefined);
  };
  const options = { timeout: startTimeoutMs };
  try {
    await client.connect(transport, options);
    const tools: McpToolDefinition[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, options);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return ok({ config, client, tools, lost: () => lostBecause, stderrTail, close });
  } catch (error) {
    await close();
    // A failed connect closes without waiting for the process: make sure it is gone.
    transport.stopIfRunning();
    const why = lostBecause ?? (error instanceof Error ? error.message : String(error));
    const tail = stderrTail();
    return err(
      new StagechartError(
        "ExtensionHost/McpServerStartFailed",
        `MCP server "${config.name}" (${commandText(config)}) did not start: ${why}${tail ? `\n${tail}` : ""}`,
        { server: config.name, command: commandText(config), ...(tail && { stderrTail: tail }) },
        { cause: error },
      ),
    );
  }
}

/**
 * The SDK's stdio transport, remembering its process: when the client gives up on a server that
 * ignores the end of its stdin (a start timeout), the SDK's own shutdown goes on in the
 * background and could outlive us; `stopIfRunning` ends such a process at once.
 */
class TrackedTransport extends StdioClientTransport {
  private startedPid: number | undefined;

  override async start(): Promise<void> {
    await super.start();
    this.startedPid = this.pid ?? undefined;
  }

  stopIfRunning(): void {
    if (this.startedPid === undefined) return;
    try {
      process.kill(this.startedPid, "SIGKILL");
    } catch {
      // already gone: the usual case, since a server exits when its stdin closes
    }
    this.startedPid = undefined;
  }
}
