import { StagechartError } from "../errors.js";
import { redactStrings } from "../secrets/redact.js";
import { type AnyTool, invokeTool, type ToolOutcome } from "../tools/index.js";
import type { Host } from "./host.js";

/**
 * Calls a tool the way the host runs every tool: in its root, within its limits and sandbox,
 * commands with an environment free of provider keys. The outcome comes back without any key
 * the host knows (a command may still print one it found elsewhere, in a file say), so none
 * reaches the journal, the audit log, a transcript or the next request to the model.
 */
export async function invokeHostTool(
  host: Host,
  tool: AnyTool,
  args: unknown,
  signal: AbortSignal,
): Promise<ToolOutcome> {
  const outcome = await invokeTool(tool, args, {
    root: host.root,
    signal,
    limits: host.limits.tool,
    sandbox: host.sandbox,
    env: host.commandEnv,
  });
  if (outcome.ok) return { ok: true, output: redactStrings(outcome.output, host.redact) };
  const { code, message, context } = outcome.error;
  const error = new StagechartError(
    code,
    host.redact(message),
    redactStrings(context, host.redact),
  );
  return { ok: false, error };
}
