import type { Tool as McpToolDefinition } from "@modelcontextprotocol/sdk/types.js";
import type { JsonSchema } from "../../definitions/json-schema.js";
import { StagechartError } from "../../errors.js";
import { redactStrings } from "../../secrets/redact.js";
import type { AnyTool, ToolOutcome } from "../types.js";
import { type McpCallResult, outcomeOfError, outcomeOfResult, unavailable } from "./call-result.js";
import { commandText, type McpConnection } from "./connection.js";

/**
 * One tool of an MCP server as a host tool named `name` (`mcp__<server>__<tool>`). It mutates
 * unless the server marks it `readOnlyHint`; its summary, which guard and grant rules match, is
 * the gist of its arguments; a call goes to the server with the stage's AbortSignal and the
 * host's tool timeout, and every failure is an outcome.
 */
export function wrapMcpTool(
  connection: McpConnection,
  definition: McpToolDefinition,
  name: string,
  inputSchema: JsonSchema,
): AnyTool {
  const server = connection.config.name;
  const site = {
    tool: name,
    server,
    command: commandText(connection.config),
    serverTool: definition.name,
  };
  return {
    name,
    description:
      definition.description ?? definition.title ?? `${definition.name}, from MCP server ${server}`,
    inputSchema,
    mutates: definition.annotations?.readOnlyHint !== true,
    summarize: summarizeArgs,
    async execute(args, context) {
      return withoutSecrets(await call(args, context), connection);
    },
  };

  async function call(
    args: Record<string, unknown>,
    { signal, limits }: Parameters<AnyTool["execute"]>[1],
  ): Promise<ToolOutcome> {
    const lost = connection.lost();
    if (lost) return unavailable(site, lost, connection.stderrTail());
    try {
      const result = await connection.client.callTool(
        { name: definition.name, arguments: args },
        undefined,
        { signal, timeout: limits.timeoutMs },
      );
      return outcomeOfResult(result as McpCallResult, site);
    } catch (error) {
      const gone = connection.lost();
      if (gone && !signal.aborted) return unavailable(site, gone, connection.stderrTail(), error);
      return outcomeOfError(error, site, {
        signal,
        timeoutMs: limits.timeoutMs,
        stderrTail: connection.stderrTail,
      });
    }
  }
}

/**
 * The outcome without the server's header values: a server that echoes its `Authorization`
 * header back (or an error that quotes a request) must not put it in the run's record.
 */
function withoutSecrets(outcome: ToolOutcome, connection: McpConnection): ToolOutcome {
  if (outcome.ok) return { ok: true, output: redactStrings(outcome.output, connection.redact) };
  const { code, message, context } = outcome.error;
  const redacted = connection.redact(message);
  const cleaned = redactStrings(context, connection.redact);
  if (redacted === message && cleaned === context) return outcome;
  return { ok: false, error: new StagechartError(code, redacted, cleaned) };
}

/** The server's input schema, without its `$schema` (servers often declare draft-07). */
export function inputSchemaOf(definition: McpToolDefinition): JsonSchema {
  const { $schema: _dialect, ...schema } = definition.inputSchema as JsonSchema;
  return schema;
}

/**
 * The gist of a call, for people and for rules like `mcp__demo__delete(42)`: a single argument
 * is its value, several are `key=value` pairs in key order. Strings are written as they are,
 * anything else as JSON. Nothing is cut, so a rule can match the whole call.
 */
function summarizeArgs(args: Record<string, unknown>): string {
  const text = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));
  const keys = Object.keys(args).sort();
  if (keys.length === 1) return text(args[keys[0] as string]);
  return keys.map((key) => `${key}=${text(args[key])}`).join(" ");
}
