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

/** Another library's schema (Standard Schema, zod 3 among them): it has no JSON Schema here. */
const isOtherSchema = (value: unknown): boolean =>
  !isZodSchema(value) && isRecord(value) && isRecord(value["~standard"]);

/** What to tell the author of a spec that gives another library's schema. */
function otherSchemaProblem(value: unknown): string {
  const standard = isRecord(value) ? value["~standard"] : undefined;
  const vendor = isRecord(standard) ? standard.vendor : undefined;
  const what =
    vendor === "zod"
      ? 'a zod 3 schema (import zod 4: "zod" 4, or "zod/v4" of zod 3.25)'
      : typeof vendor === "string"
        ? `a ${vendor} schema`
        : "a schema of another library";
  return `${what}; stagechart takes a JSON Schema or a zod 4 schema here`;
}

/** Draft 2020-12, which Ajv assumes of a schema that names none: zod names it, a YAML schema does not. */
const DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema";

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
  const diagnostics: Diagnostic[] = [];
  const look = (path: string[], value: unknown) => {
    if (isZodSchema(value)) found.push({ path, schema: value });
    else if (isOtherSchema(value))
      diagnostics.push(
        diagnostic(
          file,
          START,
          DIAGNOSTIC_CODES.pipelineSchemaUnconvertible,
          `${path.join(".")}: ${otherSchemaProblem(value)}`,
        ),
      );
  };
  look(["context"], spec.context);
  const stages: Record<string, unknown> = isRecord(spec.stages) ? spec.stages : {};
  for (const [id, entry] of Object.entries(stages)) {
    if (!isRecord(entry)) continue;
    look(["stages", id, "completion"], entry.completion);
    if (isRecord(entry.ask)) look(["stages", id, "ask", "schema"], entry.ask.schema);
  }
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  if (found.length === 0) return { ok: true, spec };

  const convert = await toJsonSchema();
  const converted = new Map<z.core.$ZodType, JsonSchema>();
  for (const { path, schema } of found) {
    try {
      // Without the default dialect's `$schema` the definition (and its hash) equals the one a
      // YAML pipeline with the same schemas loads to.
      const { $schema, ...rest } = convert(schema, {
        target: "draft-2020-12",
        io: "output",
        unrepresentable: "throw",
      });
      converted.set(schema, $schema === DEFAULT_DIALECT ? rest : { $schema, ...rest });
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
