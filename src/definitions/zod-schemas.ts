import type * as z from "../zod.js";
import { DIAGNOSTIC_CODES, type Diagnostic, diagnostic, START } from "./diagnostics.js";
import { isRecord } from "./json.js";
import type { JsonSchema } from "./json-schema.js";
import type { PipelineSpec } from "./pipeline-spec.js";

/**
 * A zod 4 schema, recognised by its shape rather than by `instanceof`, so that a schema from the
 * application's own copy of zod (another version, bundled or not) is one too.
 */
export function isZodSchema(value: unknown): value is z.core.$ZodType {
  return isRecord(value) && isRecord(value._zod) && isRecord(value._zod.def);
}

type ToJsonSchema = (schema: z.core.$ZodType, params: Record<string, unknown>) => JsonSchema;

/** zod's own conversion, loaded only when a pipeline gives a zod schema. */
let conversion: Promise<ToJsonSchema> | undefined;
const toJsonSchema = (): Promise<ToJsonSchema> => {
  conversion ??= import("zod/v4/core").then((core) => core.toJSONSchema as ToJsonSchema);
  return conversion;
};

/**
 * `spec` with every zod schema it gives converted to JSON Schema (draft 2020-12, the values a
 * schema accepts as it outputs them) with zod's `toJSONSchema`: its `context`, each ask entry's
 * `schema` and each LLM stage entry's `completion`. The same spec (no copy) when it gives none.
 * A schema zod cannot express in JSON Schema (a function, a transform, a custom check) is a
 * `Validation/PipelineSchemaUnconvertible` problem naming where it is.
 */
export async function withJsonSchemas(
  spec: PipelineSpec,
  file: string,
): Promise<{ ok: true; spec: PipelineSpec } | { ok: false; diagnostics: Diagnostic[] }> {
  // Anything but an object is the loader's to report, as for any spec.
  if (!isRecord(spec)) return { ok: true, spec };
  const found: { path: string[]; schema: z.core.$ZodType }[] = [];
  if (isZodSchema(spec.context)) found.push({ path: ["context"], schema: spec.context });
  const stages: Record<string, unknown> = isRecord(spec.stages) ? spec.stages : {};
  for (const [id, entry] of Object.entries(stages)) {
    if (!isRecord(entry)) continue;
    if (isZodSchema(entry.completion))
      found.push({ path: ["stages", id, "completion"], schema: entry.completion });
    if (isRecord(entry.ask) && isZodSchema(entry.ask.schema))
      found.push({ path: ["stages", id, "ask", "schema"], schema: entry.ask.schema });
  }
  if (found.length === 0) return { ok: true, spec };

  const convert = await toJsonSchema();
  const converted = new Map<z.core.$ZodType, JsonSchema>();
  const diagnostics: Diagnostic[] = [];
  for (const { path, schema } of found) {
    try {
      converted.set(
        schema,
        convert(schema, { target: "draft-2020-12", io: "output", unrepresentable: "throw" }),
      );
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      diagnostics.push(
        diagnostic(
          file,
          START,
          DIAGNOSTIC_CODES.pipelineSchemaUnconvertible,
          `${path.join(".")}: this zod schema has no JSON Schema form (${reason}); use types JSON Schema can express`,
        ),
      );
    }
  }
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  const json = <T>(value: T): T | JsonSchema =>
    isZodSchema(value) ? (converted.get(value) as JsonSchema) : value;
  const withStages = Object.fromEntries(
    Object.entries(stages).map(([id, entry]) => {
      if (!isRecord(entry)) return [id, entry];
      const copy: Record<string, unknown> = { ...entry };
      if (entry.completion !== undefined) copy.completion = json(entry.completion);
      if (isRecord(entry.ask)) copy.ask = { ...entry.ask, schema: json(entry.ask.schema) };
      return [id, copy];
    }),
  );
  return {
    ok: true,
    spec: {
      ...spec,
      ...(spec.context !== undefined && { context: json(spec.context) as JsonSchema }),
      stages: withStages as PipelineSpec["stages"],
    },
  };
}
