import * as z from "../zod.js";
import { checkJsonSchema, type JsonSchema } from "./json-schema.js";

/**
 * `{ ask: { prompt, schema } }`: a stage that asks a person for a value. The schema must compile
 * (Ajv, strict), since every answer is checked against it; problems point inside it.
 */
export const askEntrySchema = z
  .strictObject(
    {
      prompt: z
        .string({ error: "must be the question to ask" })
        .check(z.trim(), z.minLength(1, { error: "must be the question to ask, not empty" })),
      schema: z.record(z.string(), z.unknown(), {
        error: "must be a JSON Schema of the answer",
      }),
    },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys"
          ? "an ask takes only prompt, schema"
          : "must be { prompt, schema }",
    },
  )
  .check(
    z.superRefine((ask, ctx) => {
      const compiled = checkJsonSchema(ask.schema as JsonSchema);
      if (compiled.ok) return;
      for (const problem of compiled.error) {
        ctx.addIssue({
          code: "custom",
          path: ["schema", ...problem.path],
          message: problem.message,
        });
      }
    }),
  );

export type AskEntry = { prompt: string; schema: JsonSchema };
