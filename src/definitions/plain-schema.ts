/**
 * Whether a JSON Schema is plain: built only from keywords Ajv compiles without any check of its
 * own once the schema has passed its meta-schema, each under the one `type` it applies to (so
 * strict mode's `strictTypes` has nothing to say), `required` naming only `properties` listed
 * beside it (`strictRequired`), `enum` not empty, no `$ref`, `$id`, `format`, `pattern`, union types or
 * combinators. Such a schema cannot fail to compile, so checking a definition need not compile
 * it (Ajv's code generation was the largest part of `validate`). A node without `type` may
 * hold only `enum`, `const`, `title` and `description`. Anything else: false, and the
 * schema is compiled to find out. A cycle (possible from YAML aliases): false.
 */
export function isPlainSchema(schema: unknown): boolean {
  return plainNode(schema, new Set());
}

/** Keywords that apply to any instance: their values are data, never subschemas. */
const ANY_TYPE = new Set(["type", "enum", "const", "title", "description"]);
/** The keywords each `type` allows beside those, and which of them hold subschemas. */
const BY_TYPE: Record<string, ReadonlySet<string>> = {
  object: new Set(["properties", "required", "additionalProperties"]),
  array: new Set(["items", "minItems", "maxItems"]),
  string: new Set(["minLength", "maxLength"]),
  number: new Set(["minimum", "maximum"]),
  integer: new Set(["minimum", "maximum"]),
  boolean: new Set(),
  null: new Set(),
};

/** What a node without `type` allows beside ANY_TYPE's keywords: nothing. */
const UNTYPED: ReadonlySet<string> = new Set();

function plainNode(node: unknown, ancestors: Set<object>): boolean {
  if (!isRecord(node) || ancestors.has(node)) return false;
  const type = node.type;
  const allowed = !Object.hasOwn(node, "type")
    ? UNTYPED
    : typeof type === "string" && Object.hasOwn(BY_TYPE, type) && BY_TYPE[type];
  if (!allowed) return false;
  if (!Object.keys(node).every((key) => ANY_TYPE.has(key) || allowed.has(key))) return false;
  // Ajv refuses an empty `enum` when compiling; the meta-schema lets it pass.
  if (Object.hasOwn(node, "enum") && !(Array.isArray(node.enum) && node.enum.length > 0)) {
    return false;
  }
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
  if (!Object.values(listed).every((property) => plainNode(property, ancestors))) return false;
  if (required !== undefined) {
    if (!Array.isArray(required)) return false;
    if (!required.every((name) => typeof name === "string" && Object.hasOwn(listed, name))) {
      return false;
    }
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
