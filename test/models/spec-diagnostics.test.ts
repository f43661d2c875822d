import { describe, expect, it, vi } from "vitest";
import { diagnostic, formatDiagnostic } from "../../src/definitions/diagnostics.js";
import { resolveModelSpec } from "../../src/models/spec.js";

const problems = [
  diagnostic("m.script.yaml", { line: 2, column: 3 }, "Validation/ScriptInvalid", "bad reply"),
  diagnostic("m.script.yaml", { line: 5, column: 1 }, "Validation/ScriptInvalid", "odd", "warning"),
];

vi.mock("../../src/models/scripted.js", () => ({
  createScriptedModelFromFile: async () => ({ ok: false, diagnostics: problems }),
}));

describe("an invalid scripted model", () => {
  it("lists its diagnostics the way validate prints them, warnings marked", async () => {
    const resolved = await resolveModelSpec("scripted:m.script.yaml", {});
    expect(resolved.ok).toBe(false);
    if (resolved.ok) return;
    expect(resolved.error.code).toBe("Validation/ScriptInvalid");
    expect(resolved.error.message.split("\n").slice(1)).toEqual(problems.map(formatDiagnostic));
    expect(resolved.error.message).toContain(
      "m.script.yaml:5:1 Validation/ScriptInvalid warning: odd",
    );
  });
});
