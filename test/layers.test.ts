import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { REPO_ROOT, withoutColour } from "./support/cli.js";

const run = promisify(execFile);
const DEPCRUISE = join(REPO_ROOT, "node_modules/.bin/depcruise");

/** depcruise with the repository's rules over `src/` of `cwd`: its exit code and output. */
async function cruise(cwd: string): Promise<{ code: number; output: string }> {
  const args = ["src", "--config", ".dependency-cruiser.cjs", "--output-type", "err"];
  try {
    const { stdout } = await run(DEPCRUISE, args, { cwd });
    return { code: 0, output: withoutColour(stdout) };
  } catch (error) {
    // Coloured under CI: read without the colours.
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, output: withoutColour(failed.stdout) };
  }
}

/** A tree of `files` beside the repository's rules and a tsconfig that resolves `.js` to `.ts`. */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "stagechart-layers-"));
  copyFileSync(join(REPO_ROOT, ".dependency-cruiser.cjs"), join(dir, ".dependency-cruiser.cjs"));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext" } }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe("the layers of src/", () => {
  it("hold in the repository: no import runs from a layer to a higher one", async () => {
    const { code, output } = await cruise(REPO_ROOT);
    expect(output).toContain("no dependency violations found");
    expect(code).toBe(0);
  }, 60_000);

  it("are enforced: an import from the compiler up into the command line is a violation", async () => {
    const dir = tree({
      "src/cli/main.ts": "export const main = 1;\n",
      "src/compiler/machine.ts": 'import { main } from "../cli/main.js";\nexport const m = main;\n',
      "src/runtime/run.ts": 'import { m } from "../compiler/machine.js";\nexport const r = m;\n',
    });
    const { code, output } = await cruise(dir);
    expect(code).not.toBe(0);
    expect(output).toContain("compiler-imports-only-downward");
    expect(output).toContain("src/compiler/machine.ts → src/cli/main.ts");
    expect(output).not.toContain("runtime-imports-only-downward");
  }, 60_000);

  it("are enforced: two files of one layer importing each other are a violation", async () => {
    const dir = tree({
      "src/runtime/a.ts": 'import { b } from "./b.js";\nexport const a = () => b;\n',
      "src/runtime/b.ts": 'import { a } from "./a.js";\nexport const b = () => a;\n',
    });
    const { code, output } = await cruise(dir);
    expect(code).not.toBe(0);
    expect(output).toContain("no-import-cycles");
  }, 60_000);
});
