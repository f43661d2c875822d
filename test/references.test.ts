import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const repo = join(import.meta.dirname, "..");

/**
 * A reference to a document, a specification section or a tracker entry that is not in the
 * repository: a reader cannot follow it, so a comment says the reason itself instead.
 */
const DANGLING = [
  /DESIGN\.md/i,
  /\bthe design\b/i,
  /seed-origins/i,
  /\bseed[ -]?\d{3}\b/i,
  /\bissue #?\d+/i,
  /\(#\d+\)/,
  /§ ?[\dA-Z]/,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((name) => !name.split(/[\\/]/).includes("node_modules"))
    .map((name) => join(dir, name))
    .filter((file) => /\.(ts|tsx|js|mjs|html|css)$/.test(file) && statSync(file).isFile());
}

describe("the source's comments", () => {
  it("cite no document, specification section or issue outside the repository", () => {
    const found: string[] = [];
    for (const dir of ["src", "bench", "scripts", "visualizer"]) {
      for (const file of sourceFiles(join(repo, dir))) {
        readFileSync(file, "utf8")
          .split("\n")
          .forEach((line, index) => {
            if (DANGLING.some((pattern) => pattern.test(line)))
              found.push(`${relative(repo, file)}:${index + 1}: ${line.trim()}`);
          });
      }
    }
    expect(found).toEqual([]);
  });
});
