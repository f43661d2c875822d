import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, runCli } from "../support/cli.js";

const README = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
const GETTING_STARTED = readFileSync(join(REPO_ROOT, "docs/guide/getting-started.md"), "utf8");

/** The files a page's "first pipeline" writes: each code block after `<!-- first-pipeline: path -->`. */
function firstPipelineFiles(page: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const [, path, body] of page.matchAll(
    /<!-- first-pipeline: (\S+) -->\n```\w*\n([\s\S]*?)\n```/g,
  ))
    files.set(path as string, `${body}\n`);
  return files;
}

describe("the README", () => {
  it("is a front page: at most 300 lines", () => {
    expect(README.split("\n").length).toBeLessThanOrEqual(300);
  });

  it("links only to files that are in the repository", () => {
    const targets = [...README.matchAll(/\]\(([^)\s#]+)(#[^)]*)?\)/g)]
      .map(([, target]) => target as string)
      .filter((target) => !/^[a-z]+:/.test(target));
    expect(targets.length).toBeGreaterThan(10);
    for (const target of targets) expect(existsSync(join(REPO_ROOT, target)), target).toBe(true);
  });

  for (const [name, page] of [
    ["README", README],
    ["getting-started page", GETTING_STARTED],
  ] as const)
    it(`${name}: its first pipeline validates, runs to done and its tests pass as it says`, async () => {
      const files = firstPipelineFiles(page);
      expect([...files.keys()].sort()).toEqual([
        "hello/hello.script.yaml",
        "hello/hello.yaml",
        "hello/stages/check.md",
        "hello/stages/draft.md",
      ]);
      const dir = mkdtempSync(join(tmpdir(), "stagechart-first-"));
      for (const [path, text] of files) {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), text);
      }
      const validated = await runCli("validate", join(dir, "hello"));
      expect(validated.code, validated.stderr).toBe(0);
      expect(page).toContain(`# ${validated.stdout.trim()}`);
      const run = await runCli(
        ...["run", join(dir, "hello/hello.yaml"), "--task", "greet Ada"],
        ...["--store", join(dir, "runs.db"), "--root", dir],
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^run run-\S+ done$/m);
      const tested = await runCli("test", join(dir, "hello/hello.yaml"));
      expect(tested.code, tested.stderr).toBe(0);
      const summary = tested.stdout.trim().split("\n").at(-1) as string;
      expect(page).toContain(`\`test\` prints \`${summary}\``);
    });
});
