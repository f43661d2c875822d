import { describe, expect, it } from "vitest";
import { argsDigest } from "../../src/compiler/act-rules.js";
import { MAX_ARGUMENT_DEPTH, parseToolArguments } from "../../src/compiler/tool-arguments.js";

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

describe("tool-call arguments", () => {
  it("takes arguments nested up to the limit, which every later step can walk", () => {
    const parsed = parseToolArguments(`{"a": ${nested(MAX_ARGUMENT_DEPTH - 1)}}`);
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(argsDigest(parsed.args)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("refuses one level more, before parsing", () => {
    expect(parseToolArguments(`{"a": ${nested(MAX_ARGUMENT_DEPTH)}}`)).toEqual({
      ok: false,
      error: "the arguments are nested deeper than 100 levels of objects and arrays",
    });
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const text = JSON.stringify({ pattern: `\\"${"[{".repeat(5_000)}` });
    expect(parseToolArguments(text)).toEqual({ ok: true, args: JSON.parse(text) });
  });

  it("says why arguments that are not JSON cannot be used, and reads nothing as {}", () => {
    const parsed = parseToolArguments('{"summary": "half');
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toMatch(/^the arguments are not valid JSON: /);
    expect(parseToolArguments("  ")).toEqual({ ok: true, args: {} });
  });
});
