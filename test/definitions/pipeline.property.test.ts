import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { type LoadResult, loadPipelineFile } from "../../src/definitions/index.js";
import { MACHINES_DIR, project } from "../support/pipeline-files.js";

const bundled = readFileSync(join(MACHINES_DIR, "code-review-parallel.yaml"), "utf8");
const dir = project({ "machines/other.yaml": bundled });
const file = join(dir, "machines/fuzz.yaml");

const name = fc.constantFrom("plan", "execute", "review", "test", "done", "fail", "Nope", "");
const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), name);

const condition = fc.letrec((tie) => ({
  condition: fc.oneof(
    { depthSize: "small" },
    fc.dictionary(
      fc.constantFrom("path", "equals", "notEquals", "lt", "in", "exists", "visits", "guard", "x"),
      fc.oneof(value, fc.constantFrom("output.approved", "verdict", "ctx.task")),
      { maxKeys: 3 },
    ),
    fc.record({ all: fc.array(tie("condition"), { maxLength: 2 }) }),
    fc.record({ not: tie("condition") }),
  ),
}));

const transition = fc.oneof(
  name,
  fc.array(fc.record({ when: condition.condition, to: name }, { requiredKeys: ["to"] }), {
    maxLength: 3,
  }),
  fc.record(
    {
      parallel: fc.array(name, { maxLength: 3 }),
      join: name,
      policy: fc.oneof(
        fc.constantFrom("fail-fast", "any", "most"),
        fc.record({ quorum: fc.integer({ min: -1, max: 4 }) }),
      ),
      maxConcurrency: fc.integer({ min: -1, max: 3 }),
    },
    { requiredKeys: [] },
  ),
  value,
);

const stageEntry = fc.oneof(
  fc.record({
    file: fc.constantFrom("../stages/plan.md", "../stages/review.md", "../stages/none.md", "x.txt"),
  }),
  fc.record({ pipeline: fc.constantFrom("./other.yaml", "./fuzz.yaml", "./none.yaml") }),
  fc.record(
    { run: fc.string(), timeoutMs: fc.integer({ min: -5, max: 10 }) },
    { requiredKeys: ["run"] },
  ),
  value,
);

const pipeline = fc.record(
  {
    id: fc.oneof(name, fc.constantFrom("code-review", "Bad Id"), value),
    entry: fc.oneof(name, value),
    context: fc.oneof(
      fc.constant({ type: "object", properties: { task: { type: "string" } } }),
      fc.record({
        type: fc.constantFrom("object", "strin"),
        required: fc.array(fc.string(), { maxLength: 2 }),
      }),
      value,
    ),
    stages: fc.oneof(fc.dictionary(name, stageEntry, { maxKeys: 5 }), value),
    next: fc.oneof(fc.dictionary(name, transition, { maxKeys: 5 }), value),
    grants: fc.oneof(fc.record({ approve: fc.array(fc.string(), { maxLength: 2 }) }), value),
    extra: value,
  },
  { requiredKeys: [] },
);

function expectWellFormed(result: LoadResult<unknown>): void {
  const diagnostics = result.ok ? result.warnings : result.diagnostics;
  if (!result.ok) expect(diagnostics.length).toBeGreaterThan(0);
  for (const d of diagnostics) {
    expect(Number.isInteger(d.line) && d.line >= 1).toBe(true);
    expect(Number.isInteger(d.column) && d.column >= 1).toBe(true);
    expect(d.code).toMatch(/^(Validation|ExtensionHost)\/\w+$/);
    expect(d.message.length).toBeGreaterThan(0);
    if (result.ok) expect(d.severity).toBe("warning");
  }
}

async function check(text: string): Promise<void> {
  writeFileSync(file, text);
  expectWellFormed(await loadPipelineFile(file));
}

describe("the pipeline loader, fed anything", () => {
  it("never throws on arbitrary pipeline-shaped YAML", async () => {
    await fc.assert(
      fc.asyncProperty(pipeline, (data) => check(stringify(data))),
      { numRuns: 200 },
    );
  });

  it("never throws on arbitrary text", async () => {
    await fc.assert(fc.asyncProperty(fc.string({ unit: "binary", maxLength: 300 }), check), {
      numRuns: 200,
    });
  });

  it("never throws when a bundled pipeline is cut or mangled anywhere", async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(bundled.length), fc.nat(40), fc.string(), (at, cut, insert) =>
        check(bundled.slice(0, at) + insert + bundled.slice(at + cut)),
      ),
      { numRuns: 150 },
    );
  });
});
