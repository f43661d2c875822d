import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  loadPipelineFile,
  loadStageFile,
  parseStageDefinition,
} from "../../src/definitions/index.js";
import { parseYamlSource } from "../../src/definitions/yaml-source.js";
import { PIPELINE } from "../support/pipeline-files.js";
import { seedPlan, tempDir, writeFiles } from "../support/stages.js";
import { scalarReads } from "../support/work.js";

const numbered = (n: number, line: (i: number) => string): string =>
  Array.from({ length: n }, (_, i) => line(i)).join("\n");

/** The seed's plan stage with `n` extra frontmatter keys. */
const stageWithKeys = (n: number): string =>
  seedPlan.replace("---\n", `---\n${numbered(n, (i) => `x-key-${i}: ${i}`)}\n`);

const N = 4000;

describe("duplicate keys", () => {
  it("are reported at the second key, in block and flow mappings, however deep", () => {
    const parsed = parseYamlSource("a: 1\nb:\n  c: 1\n  c: 2\nd: { e: 1, e: 2 }\na: 3\n");
    expect(parsed.ok ? [] : parsed.problems).toEqual([
      { line: 4, column: 3, message: "Map keys must be unique" },
      { line: 5, column: 12, message: "Map keys must be unique" },
      { line: 6, column: 1, message: "Map keys must be unique" },
    ]);
  });

  it("are found with work linear in the number of keys of a stage's frontmatter", async () => {
    const valid = await scalarReads(() => {
      expect(parseStageDefinition(stageWithKeys(N), "plan.md").ok).toBe(true);
    });
    expect(valid).toBeLessThan(10 * N);
    const duplicated = stageWithKeys(N).replace("turnCap: 20", "turnCap: 20\nx-key-0: again");
    const invalid = await scalarReads(() => {
      expect(parseStageDefinition(duplicated, "plan.md").ok).toBe(false);
    });
    expect(invalid).toBeLessThan(10 * N);
  });

  it("are found with work linear in the number of keys of a pipeline", async () => {
    const dir = tempDir();
    writeFiles(dir, { "p.yaml": `${PIPELINE}${numbered(N, (i) => `x-key-${i}: ${i}`)}\n` });
    const reads = await scalarReads(() => loadPipelineFile(join(dir, "p.yaml")));
    expect(reads).toBeLessThan(10 * N);
  });

  it("a problem in each of many entries is located with work linear in their number", async () => {
    const dir = tempDir();
    const stages = numbered(N, (i) => `  s${i}: { run: "true", oops: 1 }`);
    writeFiles(dir, { "p.yaml": `id: p\nentry: s0\nstages:\n${stages}\n` });
    const reads = await scalarReads(async () => {
      const result = await loadPipelineFile(join(dir, "p.yaml"));
      expect(result.ok ? 0 : result.diagnostics.length).toBeGreaterThanOrEqual(N);
    });
    expect(reads).toBeLessThan(20 * N);
  });

  it("a stage file on disk with many keys still loads", async () => {
    const dir = tempDir();
    writeFiles(dir, { "plan.md": stageWithKeys(N) });
    const result = await loadStageFile(join(dir, "plan.md"));
    expect(result.ok && Object.keys(result.value.extensions)).toHaveLength(N);
  });
});
