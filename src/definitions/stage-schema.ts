import * as z from "../zod.js";

/** The frontmatter contract of a stage file. */

export const REQUIRED_STAGE_FIELDS = [
  "id",
  "name",
  "allowedTools",
  "completionTool",
  "completionSchema",
  "retryPolicy",
  "turnCap",
  "resolutionPolicy",
] as const;

export const KNOWN_STAGE_FIELDS = new Set<string>([
  ...REQUIRED_STAGE_FIELDS,
  "description",
  "inputsSchema",
  "tags",
]);

export const BACKOFF_KINDS = ["none", "fixed", "exponential"] as const;
export const RESOLUTION_POLICIES = ["retry-later", "skip", "fail"] as const;
export const DEFAULT_BACKOFF_DELAY_MS = 1000;

export const KEBAB_CASE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
/** Names every provider accepts for a function/tool (OpenAI and Anthropic: 1–64 of [A-Za-z0-9_-]). */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const toolName = (what: string) =>
  z.string({ error: `${what} must be a tool name` }).check(
    z.regex(TOOL_NAME, {
      error: `${what} must be 1–64 letters, digits, "_" or "-" (the names providers accept)`,
    }),
  );

const jsonSchemaObject = (what: string) =>
  z.record(z.string(), z.unknown(), { error: `${what} must be a JSON Schema object` });

const retryPolicy = z
  .strictObject({
    maxAttempts: z
      .int({ error: "maxAttempts must be an integer" })
      .check(z.gte(1, { error: "maxAttempts must be at least 1 (1 means no retries)" })),
    backoff: z.enum(BACKOFF_KINDS, { error: `backoff must be one of ${BACKOFF_KINDS.join(", ")}` }),
    delayMs: z.optional(z.int().check(z.gte(0, { error: "delayMs must be 0 or more" }))),
    maxDelayMs: z.optional(z.int().check(z.gte(0, { error: "maxDelayMs must be 0 or more" }))),
  })
  .check(
    z.refine(
      (p) => p.maxDelayMs === undefined || p.maxDelayMs >= (p.delayMs ?? DEFAULT_BACKOFF_DELAY_MS),
      { error: "maxDelayMs must not be less than delayMs", path: ["maxDelayMs"] },
    ),
  );

export const stageFrontmatterSchema = z.looseObject({
  id: z.string({ error: "id must be a string" }).check(
    z.regex(KEBAB_CASE, {
      error:
        "id must be kebab-case: lowercase letters and digits in words joined by single hyphens",
    }),
  ),
  name: z
    .string({ error: "name must be a string" })
    .check(z.trim(), z.minLength(1, { error: "name must not be empty" })),
  description: z.optional(z.string({ error: "description must be a string" })),
  allowedTools: z.array(toolName("each allowedTools entry"), {
    error: "allowedTools must be a list of tool names (it may be empty: [])",
  }),
  completionTool: toolName("completionTool"),
  completionSchema: jsonSchemaObject("completionSchema"),
  inputsSchema: z.optional(jsonSchemaObject("inputsSchema")),
  retryPolicy,
  turnCap: z
    .int({ error: "turnCap must be an integer" })
    .check(z.gte(1, { error: "turnCap must be at least 1" })),
  resolutionPolicy: z.enum(RESOLUTION_POLICIES, {
    error: `resolutionPolicy must be one of ${RESOLUTION_POLICIES.join(", ")}`,
  }),
  tags: z.optional(
    z.array(z.string({ error: "each tag must be a string" }), { error: "tags must be a list" }),
  ),
});

export type StageFrontmatter = z.infer<typeof stageFrontmatterSchema>;
