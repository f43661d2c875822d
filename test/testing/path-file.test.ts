import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPipelineFile } from "../../src/index.js";
import { readFixtureFile } from "../../src/testing/path-file.js";
import { MACHINES_DIR } from "../support/pipeline-files.js";

/** A fixtures file holding `value` as JSON, in a fresh directory. */
function fixturesFile(value: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), "stagechart-fixtures-")), "fixtures.json");
  writeFileSync(file, JSON.stringify(value));
  return file;
}

describe("readFixtureFile", () => {
  it("reads one outcome per stage, and one per outcome a path names, side by side", async () => {
    const value = {
      check: { verdict: "ok", output: { passed: 3 } },
      unit: {
        ok: { verdict: "ok", output: { failures: 0 } },
        fail: { verdict: "fail", reason: "2 failed" },
      },
    };
    const read = await readFixtureFile(fixturesFile(value));
    expect(read).toEqual({ ok: true, value });
  });

  it("refuses a per-outcome fixture that is not an outcome, saying where", async () => {
    const read = await readFixtureFile(fixturesFile({ unit: { ok: { verdict: "maybe" } } }));
    expect(read.ok).toBe(false);
    if (read.ok) return;
    expect(read.error.code).toBe("Validation/FixturesFileInvalid");
    expect(read.error.message).toContain(
      'is not a fixture map: unit.ok.verdict: Invalid option: expected one of "ok"|"skip"|"fail"',
    );
  });

  it("refuses, given the pipeline, a key that names none of its code or command stages; a sub-pipeline's by the path of stage ids", async () => {
    const loaded = await loadPipelineFile(join(MACHINES_DIR, "arena-debate.yaml"));
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    const outcome = { verdict: "ok" };
    const named = { "verify-identity": outcome, "sandbox/run-tasks": { ok: outcome } };
    expect(await readFixtureFile(fixturesFile(named), loaded.value)).toEqual({
      ok: true,
      value: named,
    });
    const misnamed = { "sandbox/run-task": outcome, plan: outcome, "run-tasks": outcome };
    const read = await readFixtureFile(fixturesFile(misnamed), loaded.value);
    expect(read.ok).toBe(false);
    if (read.ok) return;
    expect(read.error.code).toBe("Validation/FixturesFileInvalid");
    expect(read.error.message).toContain(
      "names no code or command stage of arena-debate: sandbox/run-task, plan, run-tasks",
    );
  });
});
