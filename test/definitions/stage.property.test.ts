import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import {
  type Diagnostic,
  parseStageDefinition,
  REQUIRED_STAGE_FIELDS,
} from "../../src/definitions/index.js";
import { seedPlan } from "../support/stages.js";

const FIELDS = [...REQUIRED_STAGE_FIELDS, "description", "inputsSchema", "tags", "x-extra"];

const fieldValue = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom(
    "plan",
    "Plan",
    "submit_plan",
    "retry-later",
    "none",
    "exponential",
    0,
    1,
    20,
    -1,
    2.5,
  ),
  fc.record({
    maxAttempts: fc.integer({ min: -2, max: 5 }),
    backoff: fc.constantFrom("none", "fixed", "linear"),
  }),
  fc.record({
    type: fc.constantFrom("object", "string", "strin"),
    required: fc.array(fc.string()),
  }),
  fc.array(fc.constantFrom("Read", "Grep", "rm -rf", "submit_plan", "")),
);

const frontmatter = fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string()), fieldValue, {
  maxKeys: 14,
});

const bodyPiece = fc.oneof(
  fc.string(),
  fc.constantFrom(
    "{{",
    "}}",
    "\\{{",
    "{{ctx.task}}",
    "{{env.X}}",
    "{{ctx.upstream[0].output}}",
    "{{#if}}",
    "\n",
  ),
);
const body = fc.array(bodyPiece, { maxLength: 12 }).map((parts) => parts.join(""));

function expectWellFormed(diagnostics: Diagnostic[]): void {
  expect(diagnostics.length).toBeGreaterThan(0);
  for (const d of diagnostics) {
    expect(d.file).toBe("fuzz.md");
    expect(Number.isInteger(d.line) && d.line >= 1).toBe(true);
    expect(Number.isInteger(d.column) && d.column >= 1).toBe(true);
    expect(d.code).toMatch(/^Validation\/\w+$/);
    expect(d.message.length).toBeGreaterThan(0);
  }
}

function check(text: string): void {
  const result = parseStageDefinition(text, "fuzz.md");
  if (result.ok) {
    expect(typeof result.value.id).toBe("string");
    for (const w of result.warnings) expect(w.severity).toBe("warning");
  } else {
    expectWellFormed(result.diagnostics);
  }
}

describe("the stage loader, fed anything", () => {
  it("never throws on arbitrary frontmatter and bodies", () => {
    fc.assert(
      fc.property(frontmatter, body, (data, text) => {
        check(`---\n${stringify(data)}---\n${text}`);
      }),
      { numRuns: 400 },
    );
  });

  it("never throws on arbitrary text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 400 }), (text) => check(text)),
      { numRuns: 400 },
    );
  });

  it("never throws when the seed stage is cut or mangled anywhere", () => {
    fc.assert(
      fc.property(
        fc.nat(seedPlan.length),
        fc.nat(seedPlan.length),
        fc.string(),
        (at, length, insert) => {
          check(seedPlan.slice(0, at) + insert + seedPlan.slice(at + Math.min(length, 40)));
        },
      ),
      { numRuns: 400 },
    );
  });
});
