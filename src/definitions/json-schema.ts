import { createRequire } from "node:module";
import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import type { Ajv2019 } from "ajv/dist/2019.js";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { err, ok, type Result } from "../errors.js";
import { PRECOMPILED_META_SCHEMA_2020 } from "../paths.js";
import { isPlainSchema } from "./plain-schema.js";

/**
 * JSON Schema for completion payloads, upstream inputs and ctx, compiled with Ajv: draft 2020-12
 * unless the schema's `$schema` names draft-07 or 2019-09.
 */
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

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

// validateSchema: false, since compileSchema checks every schema against its meta-schema itself
// (Ajv would check it again in `compile`). Ajv's optimizing pass over the generated code takes
// about a fifth of each compile and only drops unused names: validators report the same errors.
const options = { strict: true, allErrors: true, validateSchema: false, code: { optimize: false } };
// Every dialect and the formats (all CommonJS) are required when a schema first needs them, so
// a command that compiles none (`validate` of plain schemas) does not initialize Ajv.
const require = createRequire(import.meta.url);
type AjvClass = new (opts: typeof options) => AnyAjv;
const lazyAjv = (load: () => AjvClass) => once(() => new (load())(options));

/** One Ajv per dialect, by the `$schema` URI that names it (a trailing `#` is dropped first). */
const DIALECTS = new Map<string, () => AnyAjv>([
  ["http://json-schema.org/draft-07/schema", lazyAjv(() => require("ajv").Ajv)],
  [
    "https://json-schema.org/draft/2019-09/schema",
    lazyAjv(() => require("ajv/dist/2019.js").Ajv2019),
  ],
  [
    "https://json-schema.org/draft/2020-12/schema",
    lazyAjv(() => require("ajv/dist/2020.js").Ajv2020),
  ],
]);
const withFormats = new WeakSet<AnyAjv>();

/**
 * The 2020-12 meta-schema compiled at build time (scripts/build-meta-schema-validator.mjs), which
 * spares the first schema check 40–60 ms of compiling it. Found from the package root, which
 * tsc's files and the bundle's chunks both know; before a build there is none, and Ajv compiles
 * the meta-schema itself.
 */
const precompiledMeta2020 = once((): SchemaValidator | undefined => {
  try {
    return require(PRECOMPILED_META_SCHEMA_2020) as SchemaValidator;
  } catch {
    return undefined;
  }
});
const DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema";

const compiled = new WeakMap<JsonSchema, ValidateFunction>();
/**
 * Validators by the schema's JSON text: stages built from one template (pi workflows' phases,
 * every stage's `workflow_step`) carry equal schemas in distinct objects, compiled only once.
 * Key order is kept in the text, so a shared validator reports errors in the same order.
 */
const compiledByText = new Map<string, ValidateFunction>();

/**
 * Whether `schema` is a valid schema, with the problems `compileSchema` would report: a plain
 * schema (see `isPlainSchema`) in the default dialect is valid without a check, since it passes
 * its meta-schema and compiling cannot fail on it; any other is compiled (and kept for the run).
 */
export function checkJsonSchema(schema: JsonSchema): Result<void, SchemaProblem[]> {
  if (schema.$schema === undefined && isPlainSchema(schema)) return ok(undefined);
  const result = compileSchema(schema);
  return result.ok ? ok(undefined) : result;
}

/** Compiles once per schema (Ajv strict mode); problems point into the schema. Never throws. */
export function compileSchema(schema: JsonSchema): Result<SchemaValidator, SchemaProblem[]> {
  const cached = compiled.get(schema);
  if (cached) return ok(cached);
  const text = jsonTextOf(schema);
  const equal = text === undefined ? undefined : compiledByText.get(text);
  if (equal) {
    compiled.set(schema, equal);
    return ok(equal);
  }
  const dialect = dialectOf(schema.$schema);
  const loadAjv = dialect === undefined ? undefined : DIALECTS.get(dialect);
  if (!loadAjv) {
    return err([
      {
        path: ["$schema"],
        message: `names no JSON Schema dialect stagechart supports: use draft-07, 2019-09 or 2020-12 (the default), e.g. "${DEFAULT_DIALECT}"`,
      },
    ]);
  }
  try {
    // Inside the try: a dialect and the formats are required here, the first time one is needed.
    const ajv = loadAjv();
    if (!withFormats.has(ajv) && mayUseFormats(text)) {
      (require("ajv-formats") as (ajv: AnyAjv) => AnyAjv)(ajv);
      withFormats.add(ajv);
    }
    const metaErrors = metaSchemaErrors(ajv, dialect, schema);
    if (metaErrors) return err(metaSchemaProblems(metaErrors));
    const validate = ajv.compile(schema);
    if (typeof schema.$id === "string") ajv.removeSchema(schema.$id);
    compiled.set(schema, validate);
    if (text !== undefined) compiledByText.set(text, validate);
    return ok(validate);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const pointer = /at "#([^"]*)"/.exec(message)?.[1] ?? "";
    return err([{ path: pointerToPath(pointer), message: message.replace(/ at "#[^"]*"/, "") }]);
  }
}

/**
 * The schema's JSON text, by which equal schemas share one compilation; undefined when JSON would
 * not hold it exactly (a cycle, a BigInt, a Date, a non-finite number, `undefined`, a class
 * instance), so such a schema is compiled, and reported, on its own.
 */
function jsonTextOf(schema: JsonSchema): string | undefined {
  try {
    return JSON.stringify(schema, exactJson);
  } catch {
    return undefined;
  }
}

function exactJson(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  const exact =
    original === null ||
    typeof original === "string" ||
    typeof original === "boolean" ||
    (typeof original === "number" && Number.isFinite(original)) ||
    Array.isArray(original) ||
    (typeof original === "object" &&
      [Object.prototype, null].includes(Object.getPrototypeOf(original)));
  if (!exact) throw new Error("not JSON");
  return value;
}

/** A schema whose text names no `format` key needs no formats (unknown text: it may). */
const mayUseFormats = (text: string | undefined): boolean =>
  text === undefined || text.includes('"format":');

/** The dialect's URI as DIALECTS names it, or undefined when `$schema` is not a string. */
function dialectOf($schema: unknown): string | undefined {
  if ($schema === undefined) return DEFAULT_DIALECT;
  return typeof $schema === "string" ? $schema.replace(/#$/, "") : undefined;
}

/** Why `schema` breaks its dialect's meta-schema, or undefined when it does not. */
function metaSchemaErrors(
  ajv: AnyAjv,
  dialect: string | undefined,
  schema: JsonSchema,
): ErrorObject[] | undefined {
  const precompiled = dialect === DEFAULT_DIALECT ? precompiledMeta2020() : undefined;
  if (precompiled) return precompiled(schema) ? undefined : (precompiled.errors ?? []);
  return ajv.validateSchema(schema) ? undefined : (ajv.errors ?? []);
}

function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
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
