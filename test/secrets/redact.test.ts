import { describe, expect, it } from "vitest";
import { redactContent, redactStrings, secretRedactor } from "../../src/secrets/redact.js";

const redact = secretRedactor(["sk-secret"]);

describe("secretRedactor", () => {
  it("never looks for a key too short to be a secret: placeholders leave text as it is", () => {
    const placeholders = secretRedactor(["k", "EMPTY", "ollama"]);
    expect(placeholders('{"kind": "EMPTY ollama"}')).toBe('{"kind": "EMPTY ollama"}');
    expect(secretRedactor(["k", "sk-secret"])("kind sk-secret")).toBe("kind [redacted]");
  });
});

describe("redactStrings", () => {
  it("removes a secret from every string, however deep, keys excepted", () => {
    const value = { "sk-secret": ["a sk-secret b", { deeper: "sk-secret" }], n: 1, none: null };
    expect(redactStrings(value, redact)).toEqual({
      "sk-secret": ["a [redacted] b", { deeper: "[redacted]" }],
      n: 1,
      none: null,
    });
    expect(value["sk-secret"][0]).toBe("a sk-secret b");
  });

  it("hands back a value with no secret as it is, copying nothing", () => {
    const value = { text: "plain", list: ["a", { b: "c" }], n: 2 };
    expect(redactStrings(value, redact)).toBe(value);
  });

  it("copies only the branches where a secret was found", () => {
    const clean = { b: "c" };
    const value = { clean, dirty: ["sk-secret", "plain"] };
    const redacted = redactStrings(value, redact);
    expect(redacted).not.toBe(value);
    expect(redacted.clean).toBe(clean);
    expect(redacted.dirty).toEqual(["[redacted]", "plain"]);
  });

  it("leaves a reply's parts without secrets as they came", () => {
    const part = { type: "text" as const, text: "hello" };
    expect(redactContent([part], redact)[0]).toBe(part);
  });
});
