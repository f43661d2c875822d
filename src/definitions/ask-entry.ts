import * as z from "../zod.js";
import {
  checkJsonSchema,
  compileSchema,
  describeSchemaErrors,
  type JsonSchema,
} from "./json-schema.js";
import { type AskTimeout, askTimeoutSchema } from "./wait-timeout.js";

/**
 * `{ ask: { prompt, schema, timeout? } }`: a stage that asks a person for a value. The schema must
 * compile (Ajv, strict), since every answer is checked against it; problems point inside it. A
 * timeout's default answer is checked against it too, here, rather than when the deadline passes.
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
      timeout: z.optional(askTimeoutSchema),
    },
    {
      error: (issue) =>
        issue.code === "unrecognized_keys"
          ? "an ask takes only prompt, schema, timeout"
          : "must be { prompt, schema, timeout? }",
    },
  )
  .check(
    z.superRefine((ask, ctx) => {
      const compiled = checkJsonSchema(ask.schema as JsonSchema);
      if (!compiled.ok) {
        for (const problem of compiled.error) {
          ctx.addIssue({
            code: "custom",
            path: ["schema", ...problem.path],
            message: problem.message,
          });
        }
        return;
      }
      const fallback = ask.timeout?.fallback;
      if (fallback === undefined || fallback === "fail") return;
      const validate = compileSchema(ask.schema as JsonSchema);
      if (!validate.ok || validate.value(fallback.answer)) return;
      ctx.addIssue({
        code: "custom",
        path: ["timeout", "fallback", "answer"],
        message: `the default answer does not match the ask's schema: ${describeSchemaErrors(validate.value.errors).join("; ")}`,
      });
    }),
  );

export type AskEntry = { prompt: string; schema: JsonSchema; timeout?: AskTimeout };
