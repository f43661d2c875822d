import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { err, ok, type Result } from "../errors.js";

/** JSON Schema (draft 2020-12) for completion payloads and upstream inputs, compiled with Ajv. */
export type JsonSchema = Record<string, unknown>;

export interface SchemaValidator {
  (value: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/** Why a schema is not a valid schema, and where inside it. */
export interface SchemaProblem {
  path: (string | number)[];
  message: string;
}

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const ajv = addFormats(new Ajv2020({ strict: true, allErrors: true }));
const compiled = new WeakMap<JsonSchema, ValidateFunction>();

/** Compiles once per schema object (Ajv strict mode); problems point into the schema. */
export function compileSchema(schema: JsonSchema): Result<SchemaValidator, SchemaProblem[]> {
  const cached = compiled.get(schema);
  if (cached) return ok(cached);
  if (!ajv.validateSchema(schema)) return err(metaSchemaProblems(ajv.errors));
  try {
    const validate = ajv.compile(schema);
    if (typeof schema.$id === "string") ajv.removeSchema(schema.$id);
    compiled.set(schema, validate);
    return ok(validate);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const pointer = /at "#([^"]*)"/.exec(message)?.[1] ?? "";
    return err([{ path: pointerToPath(pointer), message: message.replace(/ at "#[^"]*"/, "") }]);
  }
}

function metaSchemaProblems(errors: readonly ErrorObject[] | null | undefined): SchemaProblem[] {
  const seen = new Set<string>();
  const problems: SchemaProblem[] = [];
  for (const e of errors ?? []) {
    if (seen.has(e.instancePath)) continue;
    seen.add(e.instancePath);
    const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues;
    const message = allowed ? `must be one of ${allowed.join(", ")}` : (e.message ?? "is invalid");
    problems.push({ path: pointerToPath(e.instancePath), message });
  }
  return problems;
}

function pointerToPath(pointer: string): (string | number)[] {
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

/** One line per Ajv validation error, with the instance path: `/steps/0 must be string`. */
export function describeSchemaErrors(errors: readonly ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => {
    const where = e.instancePath || "(root)";
    const extra =
      e.keyword === "additionalProperties"
        ? ` ("${String((e.params as { additionalProperty?: unknown }).additionalProperty)}")`
        : "";
    return `${where} ${e.message ?? "is invalid"}${extra}`;
  });
}
