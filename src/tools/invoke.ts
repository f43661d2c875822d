import { compileSchema, describeSchemaErrors } from "../definitions/json-schema.js";
import { isStagechartError, StagechartError } from "../errors.js";
import { mapStrings } from "../secrets/map-strings.js";
import { deadline } from "./deadline.js";
import { cancelled, failure, timedOut } from "./outcome.js";
import { keepHead } from "./text.js";
import type { AnyTool, ToolContext, ToolOutcome } from "./types.js";

/**
 * The one way to call a tool: checks the arguments against its schema, stops it after
 * `limits.timeoutMs` or when `context.signal` aborts, cuts long strings in its output to
 * `limits.maxOutputBytes`, and turns an exception into `ToolTerminal/ToolCrashed` (a thrown
 * StagechartError keeps its code). Never throws.
 */
export async function invokeTool(
  tool: AnyTool,
  args: unknown,
  context: ToolContext,
): Promise<ToolOutcome> {
  const validator = compileSchema(tool.inputSchema);
  if (!validator.ok) {
    return failure("ToolTerminal/InvalidToolSchema", `${tool.name} has an invalid input schema`, {
      tool: tool.name,
      problems: validator.error,
    });
  }
  if (!validator.value(args)) {
    const errors = describeSchemaErrors(validator.value.errors);
    return failure(
      "ToolTerminal/InvalidToolInput",
      `invalid arguments for ${tool.name}: ${errors.join("; ")}`,
      { tool: tool.name, errors },
    );
  }
  if (context.signal.aborted) return cancelled(tool.name);

  let onAbort = () => {};
  // A tool that ignores its signal must not hold the stage: the abort answers at once.
  const stopped = new Promise<ToolOutcome>((resolve) => {
    onAbort = () =>
      resolve(
        context.signal.aborted
          ? cancelled(tool.name)
          : timedOut(tool.name, context.limits.timeoutMs),
      );
  });
  const timeout = deadline(context.limits.timeoutMs, context.signal, () => onAbort());
  const finished = runGuarded(tool, args, {
    ...context,
    // Read only by tools that use it: most finish without ever building it.
    get signal() {
      return timeout.signal;
    },
  });
  try {
    const outcome = await Promise.race([finished, stopped]);
    return outcome.ok
      ? {
          ok: true,
          output: mapStrings(outcome.output, (text) =>
            keepHead(text, context.limits.maxOutputBytes),
          ),
        }
      : outcome;
  } finally {
    timeout.clear();
  }
}

/** A thrown StagechartError is kept as the tool's typed failure; anything else is a crash. */
async function runGuarded(
  tool: AnyTool,
  args: unknown,
  context: ToolContext,
): Promise<ToolOutcome> {
  try {
    const outcome: unknown = await tool.execute(args, context);
    if (isOutcome(outcome)) return outcome;
    return crashed(tool, `${tool.name} returned ${JSON.stringify(outcome)}, not an outcome`);
  } catch (error) {
    if (isStagechartError(error)) return { ok: false, error };
    const message = error instanceof Error ? error.message : String(error);
    return crashed(tool, `${tool.name} crashed: ${message}`, error);
  }
}

const crashed = (tool: AnyTool, message: string, cause?: unknown): ToolOutcome => ({
  ok: false,
  error: new StagechartError("ToolTerminal/ToolCrashed", message, { tool: tool.name }, { cause }),
});

const isOutcome = (value: unknown): value is ToolOutcome =>
  typeof value === "object" &&
  value !== null &&
  ((value as ToolOutcome).ok === true
    ? "output" in value
    : (value as ToolOutcome).ok === false &&
      isStagechartError((value as { error?: unknown }).error));
