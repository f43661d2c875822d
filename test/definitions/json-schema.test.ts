import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { parseStageDefinition } from "../../src/definitions/index.js";
import {
  compileSchema,
  type JsonSchema,
  type SchemaValidator,
} from "../../src/definitions/json-schema.js";
import { REPO_ROOT } from "../support/cli.js";
import { load, PIPELINE, placesOf } from "../support/pipeline-files.js";
import { seedPlan } from "../support/stages.js";

const DRAFT_07 = "http://json-schema.org/draft-07/schema#";
const DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema";
const DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema";

/** Whether `value` passes `schema`, or the problems compiling it. */
function check(schema: JsonSchema, value: unknown) {
  const compiled = compileSchema(schema);
  return compiled.ok ? compiled.value(value) : compiled.error;
}

/** A tuple of one string: `items` as a list is draft-07 and 2019-09, `prefixItems` 2020-12. */
const tupleIn = ($schema: string): JsonSchema =>
  $schema === DRAFT_2020
    ? { $schema, type: "array", prefixItems: [{ type: "string" }], items: false, minItems: 1 }
    : { $schema, type: "array", items: [{ type: "string" }], additionalItems: false, minItems: 1 };

describe("JSON Schema dialects", () => {
  it.each([
    ["draft-07", DRAFT_07],
    ["draft-07 without the #", "http://json-schema.org/draft-07/schema"],
    ["2019-09", DRAFT_2019],
    ["2020-12", DRAFT_2020],
  ])("a schema declaring %s compiles and validates by its own dialect", (_, $schema) => {
    expect(check(tupleIn($schema), ["a"])).toBe(true);
    expect(check(tupleIn($schema), ["a", "b"])).toBe(false);
    expect(check(tupleIn($schema), [1])).toBe(false);
  });

  it("a schema without $schema is 2020-12, where a list of items is no schema", () => {
    expect(check({ type: "array", items: [{ type: "string" }] }, ["a"])).toEqual([
      expect.objectContaining({ path: ["items"] }),
    ]);
  });

  it.each([
    ["draft-04", "http://json-schema.org/draft-04/schema#"],
    ["an unknown URI", "https://example.com/my-dialect"],
    ["not a string", 7],
  ])("a $schema naming %s is a problem at $schema, never an exception", (_, $schema) => {
    expect(check({ $schema, type: "object" }, {})).toEqual([
      {
        path: ["$schema"],
        message: expect.stringContaining("draft-07, 2019-09 or 2020-12"),
      },
    ]);
  });

  it("a stage's completionSchema and inputsSchema may declare draft-07", () => {
    const text = seedPlan
      .replace("completionSchema:\n", `completionSchema:\n  $schema: "${DRAFT_07}"\n`)
      .replace("---\n", `---\ninputsSchema: { $schema: "${DRAFT_2019}", type: object }\n`);
    const result = parseStageDefinition(text, "plan.md");
    expect(result.ok ? result.value.completionSchema.$schema : result.diagnostics).toBe(DRAFT_07);
  });

  it("a stage's schema declaring an unsupported dialect is StageCompletionSchemaInvalid", () => {
    const text = seedPlan.replace(
      "completionSchema:\n",
      'completionSchema:\n  $schema: "http://json-schema.org/draft-04/schema#"\n',
    );
    const result = parseStageDefinition(text, "plan.md");
    expect(result.ok ? [] : result.diagnostics.map((d) => [d.code, d.line])).toEqual([
      ["Validation/StageCompletionSchemaInvalid", 7],
    ]);
  });

  it("a pipeline's context may declare draft-07, and an unsupported one is PipelineContextInvalid", async () => {
    const withDialect = ($schema: string) =>
      PIPELINE.replace("  type: object\n", `  $schema: "${$schema}"\n  type: object\n`);
    expect((await load(withDialect(DRAFT_07))).result.ok).toBe(true);
    const { result, dir } = await load(withDialect("http://json-schema.org/draft-04/schema#"));
    expect(placesOf(dir, result)).toEqual([
      "machines/p.yaml:3:3 Validation/PipelineContextInvalid",
    ]);
  });
});

describe("compiling schemas", () => {
  const payload = (): JsonSchema => ({
    type: "object",
    properties: { summary: { type: "string" }, score: { type: "number" } },
    required: ["summary"],
  });

  it("equal schemas in distinct objects are compiled once and share one validator", () => {
    const first = compileSchema(payload());
    const second = compileSchema(payload());
    expect(first.ok && second.ok && first.value === second.value).toBe(true);
  });

  it("schemas that differ only in key order keep validators of their own", () => {
    const reordered: JsonSchema = {
      required: ["summary"],
      properties: { score: { type: "number" }, summary: { type: "string" } },
      type: "object",
    };
    const first = compileSchema(payload());
    const second = compileSchema(reordered);
    expect(first.ok && second.ok && first.value !== second.value).toBe(true);
  });
});

describe("compiling a schema JSON cannot hold", () => {
  it("is a problem, not an exception", () => {
    const looped: JsonSchema = { type: "object", properties: {} };
    (looped.properties as Record<string, unknown>).self = looped;
    expect(() => compileSchema(looped)).not.toThrow();
  });

  it("shares no compilation with a schema whose JSON text it has (a YAML 1.1 date, a NaN)", () => {
    const titled = (title: unknown): JsonSchema => ({ type: "string", title, $comment: "apart" });
    expect(compileSchema(titled("2001-12-14T00:00:00.000Z")).ok).toBe(true);
    expect(compileSchema(titled(new Date("2001-12-14"))).ok).toBe(false);
    expect(compileSchema({ type: "number", const: null, $comment: "apart" }).ok).toBe(true);
    expect(compileSchema({ type: "number", const: Number.NaN, $comment: "apart" }).ok).toBe(
      compileSchema({ type: "number", const: Number.NaN, $comment: "alone" }).ok,
    );
  });
});

describe("formats", () => {
  it.each([
    ["2020-12", DRAFT_2020],
    ["draft-07", DRAFT_07],
    ["2019-09", DRAFT_2019],
  ])("a %s schema using `format` is checked by it", (_, $schema) => {
    const email: JsonSchema = { $schema, type: "string", format: "email" };
    expect(check(email, "someone@example.com")).toBe(true);
    expect(check(email, "not an address")).toBe(false);
  });

  it("an unknown format is a problem at compile time (strict mode)", () => {
    expect(check({ type: "string", format: "postcode" }, "x")).toEqual([
      expect.objectContaining({ message: expect.stringContaining('unknown format "postcode"') }),
    ]);
  });
});

describe("loading Ajv (the built module, in a fresh process: needs `npm run build`)", () => {
  /** The CommonJS files a process holds after compiling (or only checking) `schemas`. */
  function requiredFilesAfter(
    schemas: JsonSchema[],
    use: "compileSchema" | "checkJsonSchema" = "compileSchema",
  ): string[] {
    const module = pathToFileURL(join(REPO_ROOT, "dist/definitions/json-schema.js")).href;
    const script = `const { ${use} } = await import(${JSON.stringify(module)});
for (const schema of ${JSON.stringify(schemas)}) if (!${use}(schema).ok) process.exit(3);
const { createRequire } = await import("node:module");
console.log(JSON.stringify(Object.keys(createRequire(import.meta.url).cache)));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script]);
    return JSON.parse(out.toString());
  }

  /** The CommonJS files of ajv and ajv-formats a process holds after compiling `schemas`. */
  const ajvFilesAfter = (
    schemas: JsonSchema[],
    use: "compileSchema" | "checkJsonSchema" = "compileSchema",
  ): string[] =>
    requiredFilesAfter(schemas, use).flatMap(
      (file) => /node_modules\/(ajv(?:-formats)?\/dist\/[^/]+\.js)$/.exec(file)?.[1] ?? [],
    );

  it("compiling 2020-12 schemas without formats loads neither the other dialects nor the formats", () => {
    const files = ajvFilesAfter([{ type: "object" }, { type: "array", items: { type: "string" } }]);
    expect(files).toContain("ajv/dist/2020.js");
    expect(files.filter((file) => /ajv\/dist\/(ajv|2019)\.js|ajv-formats/.test(file))).toEqual([]);
  });

  it("checking plain schemas (as definitions are checked) loads no Ajv dialect: nothing is compiled", () => {
    const plain = [
      { type: "object", required: ["a"], properties: { a: { type: "string", minLength: 1 } } },
      { type: "array", items: { enum: ["x", "y"] } },
    ];
    expect(ajvFilesAfter(plain, "checkJsonSchema")).toEqual([]);
    expect(ajvFilesAfter([{ type: "string", pattern: "^a" }], "checkJsonSchema")).toContain(
      "ajv/dist/2020.js",
    );
  });

  it("checking a 2020-12 schema uses the meta-schema validator compiled at build time", () => {
    const loaded = requiredFilesAfter([{ type: "object" }]);
    expect(loaded).toContain(join(REPO_ROOT, "dist/meta-schema-2020.cjs"));
  });

  it("the build-time meta-schema validator reports exactly what Ajv's own 2020-12 check does", () => {
    const precompiled = createRequire(import.meta.url)(
      join(REPO_ROOT, "dist/meta-schema-2020.cjs"),
    ) as SchemaValidator;
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    const broken: JsonSchema[] = [
      { type: "objekt" },
      { type: "object", properties: { a: { minLength: -1 }, b: { enum: "x" } }, required: "a" },
      { $defs: { x: { type: ["string", 3] } }, items: [{ type: "string" }], $id: 7 },
      { type: "object", properties: 3, additionalProperties: "no" },
    ];
    for (const schema of [...broken, { type: "object" }]) {
      expect(precompiled(schema)).toBe(ajv.validateSchema(schema));
      expect(precompiled.errors ?? null).toEqual(ajv.errors ?? null);
    }
  });

  it("a draft-07 schema with a format loads that dialect and the formats, when it is compiled", () => {
    const files = ajvFilesAfter([{ $schema: DRAFT_07, type: "string", format: "date" }]);
    expect(files).toEqual(expect.arrayContaining(["ajv/dist/ajv.js", "ajv-formats/dist/index.js"]));
    expect(files).not.toContain("ajv/dist/2019.js");
  });
});
