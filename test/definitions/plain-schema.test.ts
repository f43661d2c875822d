import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkJsonSchema,
  compileSchema,
  type JsonSchema,
} from "../../src/definitions/json-schema.js";
import { isPlainSchema } from "../../src/definitions/plain-schema.js";

describe("a plain JSON Schema", () => {
  it("is built from keywords each under the type it applies to, `required` naming listed properties", () => {
    const plain: JsonSchema[] = [
      {
        type: "object",
        required: ["stance"],
        additionalProperties: false,
        properties: {
          stance: { enum: ["pro", "contra"] },
          confidence: { type: "number", minimum: 0, maximum: 1 },
          tasks: { type: "array", minItems: 1, items: { type: "string", minLength: 1 } },
          note: { type: "string", description: "free text", title: "Note" },
        },
      },
      { type: "object", additionalProperties: { type: "integer" } },
      { const: 3 },
    ];
    expect(plain.map(isPlainSchema)).toEqual([true, true, true]);
  });

  it.each<[string, unknown]>([
    ["a keyword without the type it applies to", { minLength: 1 }],
    ["a keyword under another type", { type: "string", items: { type: "string" } }],
    ["`required` naming an unlisted property", { type: "object", required: ["a"] }],
    ["a union type", { type: ["string", "null"] }],
    ["an unknown type", { type: "strin" }],
    ["a $ref", { type: "object", properties: { a: { $ref: "#" } } }],
    ["a format", { type: "string", format: "email" }],
    ["a pattern", { type: "string", pattern: "[" }],
    ["a combinator", { oneOf: [{ type: "string" }] }],
    ["an empty enum (Ajv refuses it, the meta-schema does not)", { enum: [] }],
    ["$schema", { $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" }],
    ["a boolean subschema", { type: "object", properties: { a: true } }],
    ["a __proto__ property", JSON.parse('{"type":"object","properties":{"__proto__":{}}}')],
    ["a negative length (its meta-schema refuses it)", { type: "string", minLength: -1 }],
    ["a count that is not an integer", { type: "array", maxItems: 1.5 }],
    ["a bound that is a string", { type: "number", minimum: "0" }],
    ["a bound that is not finite", { type: "integer", maximum: Number.POSITIVE_INFINITY }],
    ["a title that is not a string", { type: "string", title: 3 }],
    [
      "a property required twice",
      { type: "object", required: ["a", "a"], properties: { a: { type: "string" } } },
    ],
  ])("is not one with %s: that schema is compiled", (_, schema) => {
    expect(isPlainSchema(schema)).toBe(false);
  });

  it("is not one when a property name is not well-formed UTF-16: Ajv cannot make it a URI fragment", () => {
    const schema: JsonSchema = { type: "object", properties: { "\ud800": { type: "string" } } };
    expect(isPlainSchema(schema)).toBe(false);
    expect(checkJsonSchema(schema).ok).toBe(false);
    expect(isPlainSchema({ type: "object", properties: { "😀": { type: "string" } } })).toBe(true);
  });

  it("is not one when nested deeper than compiling is sure to survive, which compiling then checks", () => {
    const nested = (depth: number): JsonSchema =>
      depth === 0 ? { type: "string" } : { type: "array", items: nested(depth - 1) };
    expect(isPlainSchema(nested(30))).toBe(true);
    expect(isPlainSchema(nested(40))).toBe(false);
    const deep = nested(3_000);
    expect(isPlainSchema(deep)).toBe(false);
    expect(checkJsonSchema(deep).ok).toBe(false);
  });

  it("is not one when it holds itself (a YAML alias can make a cycle)", () => {
    const schema: JsonSchema = { type: "object", properties: {} };
    (schema.properties as JsonSchema).self = schema;
    expect(isPlainSchema(schema)).toBe(false);
  });
});

/**
 * What strict mode or the meta-schema refuses, or what makes a schema not plain: values of the
 * wrong kind under a keyword a plain schema may hold, among them.
 */
const spoiler = fc.constantFrom<JsonSchema>(
  { minLength: 1 },
  { minimum: "x" },
  { minLength: -1 },
  { format: "email" },
  { format: "nope" },
  { pattern: "[" },
  { pattern: "^a" },
  { $ref: "#" },
  { $ref: "#/nope" },
  { type: ["string", "null"] },
  { type: "strin" },
  { required: ["zz"] },
  { items: [{ type: "string" }] },
  { nullable: true },
  { title: 3 },
  { enum: "x" },
  { properties: 3 },
  { enum: [] },
  { minLength: -1 },
  { maxLength: 1.5 },
  { minItems: "1" },
  { maxItems: -2 },
  { minimum: "0" },
  { maximum: Number.NaN },
  { minimum: Number.NEGATIVE_INFINITY },
  { description: null },
  { required: ["a", "a"] },
);

/** Schemas mostly plain, a part of them spoiled by one keyword (see `spoiler`). */
const { node: schemaArbitrary } = fc.letrec<{ node: unknown }>((tie) => {
  const name = fc.constantFrom("a", "b", "c");
  const common = {
    enum: fc.array(fc.jsonValue(), { maxLength: 3 }),
    const: fc.jsonValue(),
    title: fc.string(),
    description: fc.string(),
  };
  const byType = {
    object: {
      properties: fc.dictionary(name, tie("node"), { maxKeys: 3 }),
      additionalProperties: fc.oneof(fc.boolean(), tie("node")),
    },
    array: { items: tie("node"), minItems: fc.nat(2), maxItems: fc.nat(3) },
    string: { minLength: fc.nat(3), maxLength: fc.nat(3) },
    number: { minimum: fc.integer(), maximum: fc.integer() },
    integer: { minimum: fc.integer(), maximum: fc.integer() },
    boolean: {},
    null: {},
  };
  const typed = fc.constantFrom(...(Object.keys(byType) as (keyof typeof byType)[])).chain((type) =>
    fc
      .record({ ...common, ...byType[type] } as Record<string, fc.Arbitrary<unknown>>, {
        requiredKeys: [],
      })
      .chain((node) => {
        const listed = Object.keys((node.properties as object | undefined) ?? {});
        const required = listed.length > 0 ? fc.subarray(listed) : fc.constant(undefined);
        return required.map((names) => ({
          type,
          ...node,
          ...(names && names.length > 0 && { required: names }),
        }));
      }),
  );
  const untyped = fc.record(common, { requiredKeys: [] });
  const spoiled = fc
    .tuple(fc.oneof(typed, untyped), spoiler)
    .map(([node, extra]) => ({ ...node, ...extra }));
  return {
    node: fc.oneof(
      { depthSize: "small" },
      { arbitrary: typed, weight: 4 },
      { arbitrary: untyped, weight: 1 },
      { arbitrary: spoiled, weight: 3 },
      { arbitrary: fc.constantFrom(true, 3, null), weight: 1 },
    ),
  };
});

/** A check's outcome as data: true, or the problems. */
const outcome = (result: { ok: boolean; error?: unknown }) => (result.ok ? true : result.error);

describe("checking a schema without compiling it", () => {
  it("finds exactly what compiling it finds, so a plain schema that passes its meta-schema compiles", () => {
    let plainAndValid = 0;
    fc.assert(
      fc.property(schemaArbitrary, (schema) => {
        if (schema === null || typeof schema !== "object") return;
        const compiled = compileSchema(structuredClone(schema) as JsonSchema);
        expect(outcome(checkJsonSchema(schema as JsonSchema))).toEqual(outcome(compiled));
        if (isPlainSchema(schema) && compiled.ok) plainAndValid += 1;
      }),
      { numRuns: 500 },
    );
    // The property says something about plain schemas only if many were drawn.
    expect(plainAndValid).toBeGreaterThan(25);
  });
});
