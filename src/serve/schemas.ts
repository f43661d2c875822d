import * as z from "../zod.js";

/*
 * The body of a start, the one route `serve` adds to the API: the route validates it with this
 * schema, and the OpenAPI description is generated from it.
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
