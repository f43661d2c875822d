import { z } from "zod";
import type { ScriptEntry, ScriptReply } from "./script-file.js";

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

const toolName = z.string({ error: "must be a tool name" }).min(1, { error: "must not be empty" });
const args = z.record(z.string(), z.unknown(), {
  error: "must be a mapping of argument names to values",
});
const tokenCount = z
  .int({ error: "must be a whole number of tokens" })
  .min(0, { error: "must be 0 or more" });

const call = mapping("a call", { tool: toolName, args: args.optional() });

const rawEntry = mapping("an entry", {
  tool: toolName.optional(),
  args: args.optional(),
  text: z.string({ error: "must be a string" }).optional(),
  calls: z
    .array(call, { error: "must be a list of {tool, args}" })
    .min(1, { error: "must not be empty" })
    .optional(),
  error: z.string({ error: "must be a message" }).min(1, { error: "must not be empty" }).optional(),
  status: z
    .int({ error: "must be an HTTP status code" })
    .min(400, { error: "must be an error status, 400–599" })
    .max(599, { error: "must be an error status, 400–599" })
    .optional(),
  delayMs: z
    .int({ error: "must be a whole number of milliseconds" })
    .min(0, { error: "must be 0 or more" })
    .optional(),
  usage: mapping("usage", {
    inputTokens: tokenCount.optional(),
    outputTokens: tokenCount.optional(),
  }).optional(),
});

type RawEntry = z.output<typeof rawEntry>;

const entry = rawEntry
  .superRefine((raw, ctx) => {
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
  })
  .transform(toEntry);

/** A stage id, or `pipelineId/stageId`. */
const STAGE_KEY = /^[^\s/]+(?:\/[^\s/]+)?$/;

/** The shape of a `*.script.yaml` file (DESIGN.md §3.3); messages read after the key's path. */
export const scriptFileSchema = mapping("a script", {
  stages: z.record(
    z.string().regex(STAGE_KEY),
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
  answers: z
    .record(
      z.string().regex(STAGE_KEY),
      z.array(z.json(), { error: "must be a list of answers, one per round of the stage" }),
      {
        error: (issue) =>
          issue.code === "invalid_key"
            ? "an answers key is the id of an ask stage, without spaces"
            : "must be a mapping of ask stage ids to lists of answers",
      },
    )
    .optional(),
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
