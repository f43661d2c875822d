import * as z from "../zod.js";

/*
 * The bodies the HTTP API's read and control routes take: each route validates its body with one
 * of these, and the OpenAPI description is generated from them, so the two cannot say different
 * things. Each is a closed object: a field it does not describe is refused before anything runs.
 */

export const name = z.string().check(z.minLength(1));

export const grantBody = z.strictObject({ decision: z.enum(["approve", "deny"]) });

export const askBody = z.strictObject({ value: z.unknown() });

export const cancelBody = z.strictObject({ reason: z.optional(z.string()) });

export const overrideBody = z.strictObject({ to: name, reason: name });

export const redoBody = z.strictObject({ stage: name });

/** `stagechart fork <runId> --at <at> --set k=v… [--run-id] [--force]`, as a body. */
export const forkBody = z.strictObject({
  at: z.int().check(z.gte(1)),
  set: z.optional(z.record(name, z.unknown())),
  runId: z.optional(name),
  force: z.optional(z.boolean()),
});

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
