import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ERROR_CLASSES, ERROR_CODES, isErrorCode, StagechartError } from "../src/errors.js";

const repo = join(import.meta.dirname, "..");
const REGISTRY = join(repo, "src", "error-codes.ts");
const THIS_FILE = join(import.meta.dirname, "error-codes.test.ts");
const CODE = new RegExp(`\\b(?:${ERROR_CLASSES.join("|")})/[A-Z][A-Za-z]*`, "g");

function filesUnder(path: string, extensions: readonly string[]): string[] {
  if (statSync(path).isFile()) return [path];
  return readdirSync(path, { recursive: true, encoding: "utf8" })
    .filter((name) => !name.split(/[\\/]/).includes("node_modules"))
    .map((name) => join(path, name))
    .filter((file) => extensions.some((ext) => file.endsWith(ext)) && statSync(file).isFile());
}

/** Each code written in `files`, with the files that write it. */
function codesIn(files: readonly string[]): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of files) {
    if (file === REGISTRY || file === THIS_FILE) continue;
    for (const [code] of readFileSync(file, "utf8").matchAll(CODE)) {
      found.set(code, [...(found.get(code) ?? []), relative(repo, file)]);
    }
  }
  return found;
}

const sourceCodes = codesIn(filesUnder(join(repo, "src"), [".ts"]));

describe("the error-code registry", () => {
  it("lists every code the source writes, in code or in its comments", () => {
    const unlisted = [...sourceCodes].filter(([code]) => !isErrorCode(code));
    expect(unlisted).toEqual([]);
  });

  it("lists no code that the source never reports", () => {
    const unused = Object.keys(ERROR_CODES).filter((code) => !sourceCodes.has(code));
    expect(unused).toEqual([]);
  });

  it("names each code's class by the part before its slash", () => {
    for (const [code, info] of Object.entries(ERROR_CODES)) {
      expect(code.startsWith(`${info.class}/`), code).toBe(true);
      expect(ERROR_CLASSES).toContain(info.class);
    }
  });

  it("explains each code in a sentence a user can act on", () => {
    for (const [code, { meaning }] of Object.entries(ERROR_CODES)) {
      expect(meaning, code).toMatch(/^[A-Z][^\n]*[^\s.]\.$/);
      expect(meaning.split(" ").length, code).toBeGreaterThanOrEqual(6);
    }
  });

  it("is what the tests, examples, README and docs name", () => {
    const written = codesIn([
      ...filesUnder(join(repo, "test"), [".ts", ".mjs", ".json", ".yaml", ".md"]),
      ...filesUnder(join(repo, "examples"), [".ts", ".mjs", ".js", ".yaml", ".md"]),
      ...filesUnder(join(repo, "docs"), [".md"]),
      join(repo, "README.md"),
    ]);
    const unlisted = [...written].filter(([code]) => !isErrorCode(code));
    expect(unlisted).toEqual([]);
  });

  it("gives an error its class from its code", () => {
    const error = new StagechartError("Session/RunLocked", "run r1 is being run by another");
    expect(error.class).toBe("Session");
    expect(ERROR_CODES[error.code].class).toBe("Session");
  });

  it("does not accept a misspelt code", () => {
    // @ts-expect-error a code outside the registry does not typecheck
    const typo = new StagechartError("Validation/Typo", "misspelt");
    expect(isErrorCode(typo.code)).toBe(false);
  });
});
