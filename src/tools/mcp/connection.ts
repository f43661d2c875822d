import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Tool as McpToolDefinition } from "@modelcontextprotocol/sdk/types.js";
import { err, ok, type Result, StagechartError } from "../../errors.js";
import { type Redactor, redactUrl, secretRedactor } from "../../secrets/redact.js";
import { VERSION } from "../../version.js";
import { isHttpServer, type McpHttpServer, type McpServerConfig } from "./config.js";

/** A started MCP server: its client, the tools it listed, and whether it is still there. */
export interface McpConnection {
  config: McpServerConfig;
  client: Client;
  tools: McpToolDefinition[];
  /** Why the server is gone, once it is (it exited, or the connection broke). */
  lost(): string | undefined;
  /** The last lines the server wrote to stderr, for error messages (none over HTTP). */
  stderrTail(): string;
  /** Removes the values of the server's headers (secrets) from a text. */
  redact: Redactor;
  close(): Promise<void>;
}

const STDERR_TAIL_CHARS = 2000;

/** The command line of a server, or its URL without credentials or query, for messages. */
export const commandText = (config: McpServerConfig): string =>
  isHttpServer(config)
    ? redactUrl(config.url)
    : [config.command, ...config.args]
        .map((word) => (/[\s"'\\]/.test(word) ? JSON.stringify(word) : word))
        .join(" ");

/**
 * Starts a server over stdio, initializes the session and lists every tool (all pages). Anything
 * that goes wrong on the way is `ExtensionHost/McpServerStartFailed` naming the server and its
 * command, with the end of its stderr; the process is stopped again.
 */
export async function connectMcpServer(
  config: McpServerConfig,
  startTimeoutMs: number,
): Promise<Result<McpConnection>> {
  if (!isHttpServer(config)) return connectOver(config, startTimeoutMs, stdioTransport(config));
  const redact = headerRedactor(config);
  if (config.transport === "sse")
    return connectOver(config, startTimeoutMs, sseTransport(config), redact);
  const streamable = await connectOver(config, startTimeoutMs, streamableTransport(config), redact);
  if (streamable.ok || config.transport === "streamable-http") return streamable;
  // A server of the older protocol refuses streamable HTTP's POST (4xx): it gets the SSE
  // transport next, as the MCP specification's backwards compatibility asks of a client.
  const sse = await connectOver(config, startTimeoutMs, sseTransport(config), redact);
  return sse.ok ? sse : streamable;
}

/** Connects over `transport`, initializes the session and lists every tool (all pages). */
async function connectOver(
  config: McpServerConfig,
  startTimeoutMs: number,
  opened: { transport: Transport; stderrTail(): string; stop(): void },
  redact: Redactor = (text) => text,
): Promise<Result<McpConnection>> {
  const { transport, stderrTail } = opened;
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
    lastError = redact(error.message);
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
    return ok({ config, client, tools, lost: () => lostBecause, stderrTail, redact, close });
  } catch (error) {
    await close();
    // A failed connect closes without waiting for the process: make sure it is gone.
    opened.stop();
    const why = redact(lostBecause ?? (error instanceof Error ? error.message : String(error)));
    const tail = stderrTail();
    const verb = isHttpServer(config) ? "could not be reached" : "did not start";
    return err(
      new StagechartError(
        "ExtensionHost/McpServerStartFailed",
        `MCP server "${config.name}" (${commandText(config)}) ${verb}: ${why}${tail ? `\n${tail}` : ""}`,
        { server: config.name, command: commandText(config), ...(tail && { stderrTail: tail }) },
      ),
    );
  }
}

function stdioTransport(config: Exclude<McpServerConfig, McpHttpServer>) {
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
  return { transport, stderrTail: () => stderr.trim(), stop: () => transport.stopIfRunning() };
}

const noProcess = { stderrTail: () => "", stop: () => undefined };

function streamableTransport(config: McpHttpServer) {
  const requestInit = { headers: { ...config.headers } };
  return {
    ...noProcess,
    transport: new StreamableHTTPClientTransport(new URL(config.url), { requestInit }),
  };
}

function sseTransport(config: McpHttpServer) {
  const requestInit = { headers: { ...config.headers } };
  return { ...noProcess, transport: new SSEClientTransport(new URL(config.url), { requestInit }) };
}

/** The server's header values, and their percent-decoded forms, as secrets. */
const headerRedactor = (config: McpHttpServer): Redactor =>
  secretRedactor(
    Object.values(config.headers ?? {}).flatMap((value) => {
      // A scheme's token as well as the whole value: `Bearer <token>` may be echoed either way.
      const token = value.split(/\s+/).at(-1);
      return [value, ...(token && token !== value ? [token] : [])];
    }),
  );

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
