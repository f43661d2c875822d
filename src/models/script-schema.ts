import * as z from "../zod.js";

export interface ScriptedToolCall {
  tool: string;
  args: Record<string, unknown>;
}

/** What one model call answers: `tool` and `calls` entries both become tool calls. */
export type ScriptReply =
  | { kind: "tool-calls"; calls: ScriptedToolCall[] }
  | { kind: "text"; text: string }
  | { kind: "error"; message: string; status: number };

export interface ScriptEntry {
  reply: ScriptReply;
  delayMs: number;
  usage: { inputTokens?: number; outputTokens?: number };
}

const DEFAULT_ERROR_STATUS = 503;

const REPLY_KINDS = ["tool", "text", "calls", "error"] as const;

/** A strict mapping whose unknown keys are reported with the keys it does take. */
const mapping = <Shape extends z.core.$ZodLooseShape>(what: string, shape: Shape) =>
  z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `${what} takes only ${Object.keys(shape).join(", ")}`
        : `${what} must be a mapping`,
  });

const toolName = z
  .string({ error: "must be a tool name" })
  .check(z.minLength(1, { error: "must not be empty" }));
const args = z.record(z.string(), z.unknown(), {
  error: "must be a mapping of argument names to values",
});
const tokenCount = z
  .int({ error: "must be a whole number of tokens" })
  .check(z.gte(0, { error: "must be 0 or more" }));

const call = mapping("a call", { tool: toolName, args: z.optional(args) });

const rawEntry = mapping("an entry", {
  tool: z.optional(toolName),
  args: z.optional(args),
  text: z.optional(z.string({ error: "must be a string" })),
  calls: z.optional(
    z
      .array(call, { error: "must be a list of {tool, args}" })
      .check(z.minLength(1, { error: "must not be empty" })),
  ),
  error: z.optional(
    z.string({ error: "must be a message" }).check(z.minLength(1, { error: "must not be empty" })),
  ),
  status: z.optional(
    z
      .int({ error: "must be an HTTP status code" })
      .check(
        z.gte(400, { error: "must be an error status, 400–599" }),
        z.lte(599, { error: "must be an error status, 400–599" }),
      ),
  ),
  delayMs: z.optional(
    z
      .int({ error: "must be a whole number of milliseconds" })
      .check(z.gte(0, { error: "must be 0 or more" })),
  ),
  usage: z.optional(
    mapping("usage", {
      inputTokens: z.optional(tokenCount),
      outputTokens: z.optional(tokenCount),
    }),
  ),
});

type RawEntry = z.output<typeof rawEntry>;

const checkedEntry = rawEntry.check(
  z.superRefine((raw, ctx) => {
    const kinds = REPLY_KINDS.filter((kind) => raw[kind] !== undefined);
    if (kinds.length === 0) {
      ctx.addIssue({
        code: "custom",
        message: `an entry needs one of ${REPLY_KINDS.join(", ")}`,
      });
    }
    for (const extra of kinds.slice(1)) {
      ctx.addIssue({
        code: "custom",
        path: [extra],
        message: `an entry has exactly one of ${REPLY_KINDS.join(", ")}; this one also has ${kinds[0]}`,
      });
    }
    if (raw.args !== undefined && raw.tool === undefined) {
      ctx.addIssue({ code: "custom", path: ["args"], message: "only a tool entry takes args" });
    }
    if (raw.status !== undefined && raw.error === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["status"],
        message: "only an error entry takes status",
      });
    }
  }),
);
const entry = z.pipe(checkedEntry, z.transform(toEntry));

/** A stage id, or `pipelineId/stageId`. */
const STAGE_KEY = /^[^\s/]+(?:\/[^\s/]+)?$/;

/** The shape of a `*.script.yaml` file (docs/guide/scripted-model.md); messages read after the key's path. */
export const scriptFileSchema = mapping("a script", {
  stages: z.record(
    z.string().check(z.regex(STAGE_KEY)),
    z.array(entry, { error: "must be a list of entries" }),
    {
      error: (issue) =>
        issue.code === "invalid_key"
          ? "a stage key is a stage id or pipelineId/stageId, without spaces"
          : issue.input === undefined
            ? "missing: a script maps stages to lists of entries by stage id"
            : "must be a mapping of stage ids to lists of entries",
    },
  ),
  /** What a person asked by an ask stage answers, one answer per round of the stage. */
  answers: z.optional(
    z.record(
      z.string().check(z.regex(STAGE_KEY)),
      z.array(z.json(), { error: "must be a list of answers, one per round of the stage" }),
      {
        error: (issue) =>
          issue.code === "invalid_key"
            ? "an answers key is the id of an ask stage, without spaces"
            : "must be a mapping of ask stage ids to lists of answers",
      },
    ),
  ),
});

/** Runs only on entries the refinement accepted, so exactly one reply kind is present. */
function toEntry(raw: RawEntry): ScriptEntry {
  return {
    reply: toReply(raw),
    delayMs: raw.delayMs ?? 0,
    usage: raw.usage ?? {},
  };
}

function toReply(raw: RawEntry): ScriptReply {
  if (raw.text !== undefined) return { kind: "text", text: raw.text };
  if (raw.error !== undefined) {
    return { kind: "error", message: raw.error, status: raw.status ?? DEFAULT_ERROR_STATUS };
  }
  const calls = raw.calls ?? (raw.tool !== undefined ? [{ tool: raw.tool, args: raw.args }] : []);
  return { kind: "tool-calls", calls: calls.map((c) => ({ tool: c.tool, args: c.args ?? {} })) };
}
