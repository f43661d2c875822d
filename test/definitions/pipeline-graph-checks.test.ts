import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/definitions/index.js";
import { tempDir, writeFiles } from "../support/stages.js";
import { searchedElements } from "../support/work.js";

const N = 300;

/** `n` command stages, each followed by the next; the last one goes to `last`. */
function chain(n: number, last: string): string {
  const ids = Array.from({ length: n }, (_, i) => `s${i}`);
  const stages = ids.map((id) => `  ${id}: { run: "true" }`).join("\n");
  const next = ids.map((id, i) => `  ${id}: ${ids[i + 1] ?? last}`).join("\n");
  return `id: p\nentry: s0\nstages:\n${stages}\nnext:\n${next}\n`;
}

async function loadYaml(yaml: string) {
  const dir = tempDir();
  writeFiles(dir, { "p.yaml": yaml });
  return loadPipelineFile(join(dir, "p.yaml"));
}

describe("the topology checks", () => {
  it("walk a long chain of stages with work linear in its length", async () => {
    const searched = await searchedElements(async () => {
      expect((await loadYaml(chain(N, "done"))).ok).toBe(true);
    });
    expect(searched).toBeLessThan(50 * N);
  });

  it("find a long unconditional loop with work linear in its length", async () => {
    const searched = await searchedElements(async () => {
      const result = await loadYaml(chain(N, "s0"));
      const errors = result.ok ? [] : result.diagnostics.filter((d) => d.severity === "error");
      expect(errors.map((d) => d.code)).toEqual(["Validation/PipelineUnboundedLoop"]);
    });
    expect(searched).toBeLessThan(50 * N);
  });

  it("check a wide parallel group, and a stage many rules lead to, with work linear in their size", async () => {
    const ids = Array.from({ length: N }, (_, i) => `s${i}`);
    const stages = [...ids, "fan", "join"].map((id) => `  ${id}: { run: "true" }`).join("\n");
    const rules = ids.map((id) => `    - { when: { path: ctx.x, equals: ${id} }, to: join }`);
    const yaml = `id: p\nentry: fan\nstages:\n${stages}\nnext:\n  fan: { parallel: [${ids.join(", ")}], join: join }\n  join:\n${rules.join("\n")}\n    - { to: done }\n`;
    const searched = await searchedElements(async () => {
      expect((await loadYaml(yaml)).ok).toBe(true);
    });
    expect(searched).toBeLessThan(50 * N);
  });
});
