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

/** Built or installed folders: not the project's own text. */
const NOT_OURS = ["node_modules", "dist", ".vitepress"];

function filesUnder(dir: string, kinds: RegExp): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((name) => !name.split(/[\\/]/).some((part) => NOT_OURS.includes(part)))
    .map((name) => join(dir, name))
    .filter((file) => kinds.test(file) && statSync(file).isFile());
}

const SOURCE = /\.(ts|tsx|js|mjs|html|css)$/;

/** Lines of `files` that cite what a reader of the repository cannot follow. */
function danglingIn(files: readonly string[]): string[] {
  return files.flatMap((file) =>
    readFileSync(file, "utf8")
      .split("\n")
      .flatMap((line, index) =>
        DANGLING.some((pattern) => pattern.test(line))
          ? [`${relative(repo, file)}:${index + 1}: ${line.trim()}`]
          : [],
      ),
  );
}

describe("the source's comments", () => {
  it("cite no document, specification section or issue outside the repository", () => {
    const dirs = ["src", "bench", "scripts", "visualizer"];
    expect(danglingIn(dirs.flatMap((dir) => filesUnder(join(repo, dir), SOURCE)))).toEqual([]);
  });
});

describe("the documentation", () => {
  it("cites no document, specification section or issue outside the repository", () => {
    const pages = filesUnder(join(repo, "docs"), /\.md$/);
    const top = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "CHANGELOG.md"];
    expect(danglingIn([...pages, ...top.map((name) => join(repo, name))])).toEqual([]);
  });
});
