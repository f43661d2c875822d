import type * as z from "../zod.js";
import type { JsonSchema } from "./json-schema.js";

/** A schema as a TypeScript pipeline may give it: JSON Schema, or a zod 4 schema (any copy). */
export type SchemaSpec = JsonSchema | z.core.$ZodType;

/** The type a schema's values have: a zod schema's output; `never` (not known) for JSON Schema. */
export type InferSchema<S> = S extends z.core.$ZodType ? z.core.output<S> : never;
