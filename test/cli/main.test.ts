import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { tempDir } from "../support/stages.js";

const BIN = resolve(import.meta.dirname, "../../bin/stagechart.js");
const RECORD = resolve(import.meta.dirname, "../support/record-imports.mjs");
const REPO = resolve(import.meta.dirname, "../..");

/** The packages the built CLI imports for one command line (needs `npm run build`). */
function packagesLoadedBy(args: string[]): Set<string> {
  const log = join(tempDir(), "imports.log");
  execFileSync(process.execPath, ["--import", RECORD, BIN, ...args], {
    cwd: REPO,
    env: { ...process.env, STAGECHART_IMPORT_LOG: log },
    stdio: "pipe",
  });
  const urls = readFileSync(log, "utf8").split("\n");
  return new Set(urls.flatMap((url) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ?? []));
}

const HEAVY = ["@ai-sdk/anthropic", "@ai-sdk/openai", "@modelcontextprotocol/sdk", "zod", "ajv"];

describe("starting the CLI", () => {
  it("--version loads no command: no provider, no MCP client, no zod, no Ajv", () => {
    const loaded = packagesLoadedBy(["--version"]);
    expect(HEAVY.filter((name) => loaded.has(name))).toEqual([]);
    expect(loaded.has("better-sqlite3")).toBe(false);
    expect(loaded.has("xstate")).toBe(false);
  });

  it("validate without --mcp loads neither the model providers nor the MCP client", () => {
    const loaded = packagesLoadedBy(["validate", "machines/", "stages/"]);
    expect(loaded.has("ajv")).toBe(true);
    expect(loaded.has("@modelcontextprotocol/sdk")).toBe(false);
    expect([...loaded].filter((name) => name.startsWith("@ai-sdk/"))).toEqual([]);
  });

  it("still lists every command in --help, and refuses an unknown one", async () => {
    const out: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => out.push(t) };
    expect(await main(["--help"], io)).toBe(0);
    for (const command of ["validate", "run", "resume", "runs", "show", "audit", "graph", "test"])
      expect(out.join("")).toMatch(new RegExp(`\\n {2}${command} `));
    expect(await main(["nonsense"], io)).toBe(2);
    expect(out.join("")).toContain("unknown command 'nonsense'");
  });
});
