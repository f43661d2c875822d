import * as z from "../zod.js";

/*
 * The bodies the HTTP API takes: each route validates its body with one of these, and the OpenAPI
 * description is generated from them, so the two cannot say different things.
 */

const name = z.string().check(z.minLength(1));

export const startBody = z
  .strictObject({
    pipeline: z.optional(name),
    definition: z.optional(z.string().check(z.regex(/^[0-9a-f]{8,64}$/))),
    task: z.optional(z.string()),
    ctx: z.optional(z.record(name, z.unknown())),
    model: z.optional(name),
    runId: z.optional(z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/))),
  })
  .check(
    z.refine((body) => (body.pipeline === undefined) !== (body.definition === undefined), {
      message: "give either pipeline (a served pipeline's name) or definition (a stored hash)",
    }),
  );

export type StartRequest = z.infer<typeof startBody>;

export const grantBody = z.strictObject({ decision: z.enum(["approve", "deny"]) });

export const askBody = z.strictObject({ value: z.unknown() });

export const cancelBody = z.strictObject({ reason: z.optional(z.string()) });

export const overrideBody = z.strictObject({ to: name, reason: name });

export const redoBody = z.strictObject({ stage: name });

/** What a refusal's body is: `{error: {code, message, …}}`. */
export const ERROR_SCHEMA = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: { type: "string", description: "a `<Class>/<Name>` code of the error registry" },
        message: { type: "string" },
        class: { type: "string" },
        context: { type: "object" },
      },
    },
  },
} as const;
