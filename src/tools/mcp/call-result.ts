import { type ContentBlock, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { StagechartError } from "../../errors.js";
import { cancelled, failure, success, timedOut } from "../outcome.js";
import type { JsonValue, ToolOutcome } from "../types.js";

/** Which call an outcome belongs to: the host's tool name and the server's own names. */
interface McpCallSite {
  tool: string;
  server: string;
  command: string;
  /** The tool's name on its server. */
  serverTool: string;
}

export interface McpCallResult {
  content?: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * A `tools/call` result as an outcome. The output is the structured content when the server
 * gives one, the text when every block is text, and otherwise one JSON object per block (images
 * and audio are described, not passed on). `isError` is `ToolTerminal/McpToolError` with the
 * server's text as the message, so the model can read what went wrong.
 */
export function outcomeOfResult(result: McpCallResult, site: McpCallSite): ToolOutcome {
  const blocks = result.content ?? [];
  if (result.isError) {
    const text = textOf(blocks) || "the tool reported an error without saying why";
    return failure("ToolTerminal/McpToolError", text, {
      tool: site.tool,
      server: site.server,
      serverTool: site.serverTool,
    });
  }
  if (result.structuredContent !== undefined) {
    return success(result.structuredContent as JsonValue);
  }
  if (blocks.every((block) => block.type === "text")) return success(textOf(blocks));
  return success(blocks.map(describeBlock));
}

/** Why a call threw, as an outcome: the server gone, a timeout, a cancellation, a protocol error. */
export function outcomeOfError(
  error: unknown,
  site: McpCallSite,
  context: { signal: AbortSignal; timeoutMs: number; stderrTail: () => string },
): ToolOutcome {
  if (context.signal.aborted) return cancelled(site.tool);
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
    return timedOut(site.tool, context.timeoutMs);
  }
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
    return {
      ok: false,
      error: new StagechartError(
        "ToolTerminal/McpProtocolError",
        `MCP server "${site.server}" refused the call to ${site.serverTool}: ${message}`,
        { tool: site.tool, server: site.server, mcpCode: error.code },
        { cause: error },
      ),
    };
  }
  return unavailable(site, message, context.stderrTail(), error);
}

export function unavailable(
  site: McpCallSite,
  why: string,
  stderrTail: string,
  cause?: unknown,
): ToolOutcome {
  return {
    ok: false,
    error: new StagechartError(
      "ToolTransient/McpServerUnavailable",
      `MCP server "${site.server}" (${site.command}) is not available: ${why}`,
      {
        tool: site.tool,
        server: site.server,
        command: site.command,
        ...(stderrTail && { stderrTail }),
      },
      { cause },
    ),
  };
}

const textOf = (blocks: readonly ContentBlock[]): string =>
  blocks
    .flatMap((block) => (block.type === "text" ? [block.text] : []))
    .join("\n")
    .trim();

function describeBlock(block: ContentBlock): JsonValue {
  switch (block.type) {
    case "text":
      return { type: "text", text: block.text };
    case "image":
    case "audio":
      return {
        type: block.type,
        mimeType: block.mimeType,
        omitted: `${block.data.length} characters of base64 data`,
      };
    case "resource":
      return {
        type: "resource",
        uri: block.resource.uri,
        ...("text" in block.resource
          ? { text: block.resource.text }
          : { omitted: "binary resource" }),
      };
    case "resource_link":
      return {
        type: "resource_link",
        uri: block.uri,
        name: block.name,
        ...(block.description !== undefined && { description: block.description }),
      };
  }
}
