import * as z from "../zod.js";

/**
 * The pieces the pipeline's schemas are built of (`pipeline-schema.ts`, `stage-entry-schema.ts`):
 * messages that read after the offending key's path (`must be a stage id`).
 */

/** A strict mapping whose unknown keys are reported with the keys it does take. */
export const mapping = <Shape extends z.core.$ZodLooseShape>(what: string, shape: Shape) =>
  z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `${what} takes only ${Object.keys(shape).join(", ")}`
        : `must be ${what}`,
  });

export type ValueKind = "string" | "array" | "object";
const kindOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value;

/** One of several shapes chosen by the value's kind, so errors come from the shape the author meant. */
export function byKind<T>(
  branches: Partial<Record<ValueKind, z.ZodMiniType<T>>>,
  expected: string,
) {
  return z.transform((value: unknown, ctx): T => {
    const branch = branches[kindOf(value) as ValueKind];
    if (!branch) {
      ctx.issues.push({ code: "custom", message: `must be ${expected}`, input: value });
      return z.NEVER;
    }
    const parsed = branch.safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) {
      ctx.issues.push({ ...issue, input: value } as (typeof ctx.issues)[number]);
    }
    return z.NEVER;
  });
}

export const text = (what: string) =>
  z
    .string({ error: `must be ${what}` })
    .check(z.trim(), z.minLength(1, { error: `must be ${what}, not empty` }));
export const present = (raw: object, key: string): boolean =>
  (raw as Record<string, unknown>)[key] !== undefined;

export const fn = <T>(what: string) =>
  z.custom<T>((value) => typeof value === "function", { error: `must be ${what}` });
