import { isRecord } from "./json.js";

/**
 * Whether a JSON Schema is plain: built only from keywords Ajv compiles without any check of its
 * own, each under the one `type` it applies to (so strict mode's `strictTypes` has nothing to
 * say), `required` naming only `properties` listed beside it, once each (`strictRequired`),
 * `enum` not empty, no `$ref`, `$id`, `format`, `pattern`, union types or combinators, and every
 * value of the kind its meta-schema asks for (`minLength` a non-negative integer, `minimum` a
 * finite number, `title` a string…). Such a schema passes its meta-schema and cannot fail to
 * compile, so checking a definition need neither check nor compile it (Ajv's code generation was
 * the largest part of `validate`). A node without `type` may hold only `enum`, `const`, `title`
 * and `description`. Anything else: false, and the schema is compiled to find out. A cycle
 * (possible from YAML aliases), nesting deeper than MAX_PLAIN_DEPTH (compiling it may overflow
 * the stack), or a property name that is not well-formed UTF-16 (Ajv makes names URI fragments):
 * false.
 */
export function isPlainSchema(schema: unknown): boolean {
  return plainNode(schema, new Set());
}

/** Whether a keyword's value is what the 2020-12 meta-schema asks for (Ajv's strict numbers). */
type ValueCheck = (value: unknown) => boolean;
const anyValue: ValueCheck = () => true;
const aString: ValueCheck = (value) => typeof value === "string";
const aCount: ValueCheck = (value) => Number.isInteger(value) && (value as number) >= 0;
const aFiniteNumber: ValueCheck = (value) => Number.isFinite(value);
/** `type`, subschemas and `required`: checked by plainNode, plainObject and plainArray. */
const checkedApart: ValueCheck = () => true;

/** Keywords that apply to any instance: their values are data, never subschemas. */
const ANY_TYPE = new Map<string, ValueCheck>([
  ["type", checkedApart],
  ["enum", (value) => Array.isArray(value) && value.length > 0],
  ["const", anyValue],
  ["title", aString],
  ["description", aString],
]);
/** The keywords each `type` allows beside those, with what their values may be. */
const BY_TYPE: Record<string, ReadonlyMap<string, ValueCheck>> = {
  object: new Map([
    ["properties", checkedApart],
    ["required", checkedApart],
    ["additionalProperties", checkedApart],
  ]),
  array: new Map([
    ["items", checkedApart],
    ["minItems", aCount],
    ["maxItems", aCount],
  ]),
  string: new Map([
    ["minLength", aCount],
    ["maxLength", aCount],
  ]),
  number: new Map([
    ["minimum", aFiniteNumber],
    ["maximum", aFiniteNumber],
  ]),
  integer: new Map([
    ["minimum", aFiniteNumber],
    ["maximum", aFiniteNumber],
  ]),
  boolean: new Map(),
  null: new Map(),
};

/** What a node without `type` allows beside ANY_TYPE's keywords: nothing. */
const UNTYPED: ReadonlyMap<string, ValueCheck> = new Map();

/** Subschemas deeper than this are compiled to find out: Ajv's compiler recurses per level. */
const MAX_PLAIN_DEPTH = 32;

function plainNode(node: unknown, ancestors: Set<object>): boolean {
  if (!isRecord(node) || ancestors.has(node) || ancestors.size >= MAX_PLAIN_DEPTH) return false;
  const type = node.type;
  const allowed = !Object.hasOwn(node, "type")
    ? UNTYPED
    : typeof type === "string" && Object.hasOwn(BY_TYPE, type) && BY_TYPE[type];
  if (!allowed) return false;
  // Ajv refuses an empty `enum` when compiling; the meta-schema lets it pass.
  const valid = ([key, value]: [string, unknown]) =>
    (ANY_TYPE.get(key) ?? allowed.get(key))?.(value) === true;
  if (!Object.entries(node).every(valid)) return false;
  ancestors.add(node);
  const plain = type === "object" ? plainObject(node, ancestors) : plainArray(node, ancestors);
  ancestors.delete(node);
  return plain;
}

function plainObject(node: Record<string, unknown>, ancestors: Set<object>): boolean {
  const { properties, required, additionalProperties } = node;
  if (properties !== undefined && !isRecord(properties)) return false;
  const listed = properties ?? {};
  if (Object.hasOwn(listed, "__proto__")) return false;
  if (!Object.keys(listed).every(isWellFormed)) return false;
  if (!Object.values(listed).every((property) => plainNode(property, ancestors))) return false;
  if (required !== undefined) {
    if (!Array.isArray(required)) return false;
    if (!required.every((name) => typeof name === "string" && Object.hasOwn(listed, name))) {
      return false;
    }
    if (new Set(required).size !== required.length) return false;
  }
  return (
    additionalProperties === undefined ||
    typeof additionalProperties === "boolean" ||
    plainNode(additionalProperties, ancestors)
  );
}

function plainArray(node: Record<string, unknown>, ancestors: Set<object>): boolean {
  return node.items === undefined || plainNode(node.items, ancestors);
}

/** No lone surrogate (`String.prototype.isWellFormed`, not in this project's ES2023 lib). */
const isWellFormed = (name: string): boolean =>
  !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(name);
