import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { tempDir } from "../support/stages.js";

const BIN = resolve(import.meta.dirname, "../../bin/stagechart.js");
const RECORD = resolve(import.meta.dirname, "../support/record-imports.mjs");
const REPO = resolve(import.meta.dirname, "../..");

/**
 * The files (URLs) the built CLI imports or requires for one command line (needs `npm run
 * build`), which exits `status`.
 */
function filesLoadedBy(args: string[], status = 0): string[] {
  const log = join(tempDir(), "imports.log");
  const child = spawnSync(process.execPath, ["--import", RECORD, BIN, ...args], {
    cwd: REPO,
    env: { ...process.env, STAGECHART_IMPORT_LOG: log },
    encoding: "utf8",
  });
  expect(child.status, child.stderr).toBe(status);
  return [...new Set(readFileSync(log, "utf8").split("\n").filter(Boolean))];
}

/**
 * The package modules a command line loads (paths from `node_modules/`): each is a file imported
 * or required from node_modules, which the build bundles into none of its files but the packages
 * it bundles apart (stagechart's zod, commander, picocolors and js-yaml's loader, each in a file
 * of its own in dist/).
 */
const packageModulesLoadedBy = (args: string[], status = 0): string[] =>
  filesLoadedBy(args, status).flatMap((url) => /node_modules\/[^\s"]+/.exec(url)?.[0] ?? []);

/** The packages a command line loads (see `packageModulesLoadedBy`). */
const packagesLoadedBy = (args: string[], status = 0): Set<string> =>
  new Set(
    packageModulesLoadedBy(args, status).map(
      (module) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(module)?.[1] as string,
    ),
  );

/**
 * What checks and compiles JSON Schemas among the files a command line loads: Ajv's compiler
 * (its core, code generation and dialects), ajv-formats, and the 2020-12 meta-schema validator
 * built with the CLI (dist/meta-schema-2020.cjs, whether required or bundled into a chunk).
 */
function schemaCheckersLoadedBy(args: string[], status = 0): string[] {
  const ajv = packageModulesLoadedBy(args, status).filter((module) =>
    /node_modules\/(ajv\/dist\/(core|ajv|2019|2020)\.js|ajv\/dist\/compile\/|ajv-formats\/)/.test(
      module,
    ),
  );
  const own = [...filesLoadedBy(args, status), ...bundledModulesLoadedBy(args, status)];
  return [...ajv, ...own.filter((file) => file.endsWith("dist/meta-schema-2020.cjs"))];
}

/** The modules of stagechart's own bundled into the CLI bundle's files a command line loads. */
const bundledModulesLoadedBy = (args: string[], status = 0): string[] =>
  filesLoadedBy(args, status)
    .filter((url) => url.endsWith(".mjs"))
    .flatMap((url) => readFileSync(new URL(url), "utf8").split("\n"))
    .flatMap((line) => (line.startsWith("// dist/") ? [line.slice(3)] : []));

/** The files of stagechart's own (not the pipelines' code modules) a command line loads. */
const ownFilesLoadedBy = (args: string[]): string[] =>
  filesLoadedBy(args)
    .filter(
      (url) =>
        url.startsWith(pathToFileURL(REPO).href) &&
        !url.includes("/machines/") &&
        !url.includes("/node_modules/"),
    )
    .map((url) => relative(REPO, fileURLToPath(url)));

const HEAVY = ["@ai-sdk/anthropic", "@ai-sdk/openai", "@modelcontextprotocol/sdk", "zod", "ajv"];
const RUNTIME = ["ai", "xstate", "better-sqlite3", "pg", "@statelyai/inspect", "elkjs"];

describe("starting the CLI", () => {
  it("--version loads no command: no provider, no MCP client, no zod, no Ajv", () => {
    const loaded = packagesLoadedBy(["--version"]);
    expect(HEAVY.filter((name) => loaded.has(name))).toEqual([]);
    expect(RUNTIME.filter((name) => loaded.has(name))).toEqual([]);
  });

  it("run loads OpenTelemetry only when an OTEL_* variable turns tracing on", () => {
    const project = tempDir();
    cpSync(join(REPO, "test/fixtures/demo-project"), project, { recursive: true });
    const args = ["run", "code-review", "--task", "t", "--headless", "--root", project];
    const loaded = packagesLoadedBy([...args, "--store", join(project, "runs.db")]);
    expect(loaded.has("xstate")).toBe(true);
    expect([...loaded].filter((name) => name.startsWith("@opentelemetry/"))).toEqual([]);
  });

  it("validate without --mcp loads neither the model providers, the MCP client, the tools nor the runtime", () => {
    const loaded = packagesLoadedBy(["validate", "machines/", "stages/"]);
    expect(loaded.has("@modelcontextprotocol/sdk")).toBe(false);
    expect([...loaded].filter((name) => name.startsWith("@ai-sdk/"))).toEqual([]);
    expect(RUNTIME.filter((name) => loaded.has(name))).toEqual([]);
    const bundled = bundledModulesLoadedBy(["validate", "machines/", "stages/"]);
    expect(bundled.filter((module) => module.startsWith("dist/tools/"))).toEqual([]);
  });

  it("validate loads only the zod that stagechart's schemas call, from its own bundle: neither zod's classic build nor its JSON Schema conversion", () => {
    // The build bundles that much of zod's functional build into dist/zod.mjs (the one package
    // bundled): installed, `zod/mini` brings all of zod's core, its 64 locales and conversion.
    const args = ["validate", "machines/", "stages/"];
    expect(
      packageModulesLoadedBy(args).filter((module) => module.startsWith("node_modules/zod/")),
    ).toEqual([]);
    expect(ownFilesLoadedBy(args)).toContain("dist/zod.mjs");
    const zod = readFileSync(join(REPO, "dist", "zod.mjs"), "utf8")
      .split("\n")
      .flatMap((line) => /^\/\/ .*node_modules\/(zod\/.*)$/.exec(line)?.[1] ?? []);
    expect(zod).toEqual(expect.arrayContaining([expect.stringMatching(/\/v4\/mini\//)]));
    expect(
      zod.filter((line) => /\/classic\/|json-schema|to-json-schema|\/locales\/(?!en)/.test(line)),
    ).toEqual([]);
  });

  it("validate reads valid plain YAML with js-yaml's loader from the build's own file, without the `yaml` package, which a problem to report loads", () => {
    const args = ["validate", "machines/", "stages/"];
    const loaded = packagesLoadedBy(args);
    expect(loaded.has("js-yaml")).toBe(false);
    expect(ownFilesLoadedBy(args)).toContain("dist/js-yaml.mjs");
    // Only js-yaml's loader: its modules, without its dumper.
    const jsYaml = readFileSync(join(REPO, "dist", "js-yaml.mjs"), "utf8")
      .split("\n")
      .flatMap((line) => /^\/\/ .*node_modules\/js-yaml\/(.*)$/.exec(line)?.[1] ?? []);
    expect(jsYaml).toContain("lib/loader.js");
    expect(jsYaml.filter((file) => /dumper|dist\//.test(file))).toEqual([]);
    expect(loaded.has("yaml")).toBe(false);
    const dir = tempDir();
    writeFileSync(join(dir, "broken.md"), "---\nid: a\nid: b\n---\nHello.\n");
    expect(packagesLoadedBy(["validate", join(dir, "broken.md")], 1).has("yaml")).toBe(true);
  });

  it("validate checks the bundled files' plain schemas with neither Ajv's compiler nor the meta-schema, which a schema to compile loads", () => {
    expect(schemaCheckersLoadedBy(["validate", "machines/", "stages/"])).toEqual([]);
    const dir = tempDir();
    const stage = readFileSync(join(REPO, "stages", "plan.md"), "utf8");
    const withSummary = (summary: string) =>
      writeFileSync(join(dir, "plan.md"), stage.replace("summary: { type: string }", summary));
    withSummary('summary: { type: string, pattern: "^[A-Z]" }');
    expect(schemaCheckersLoadedBy(["validate", dir])).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/meta-schema-2020/),
        expect.stringMatching(/ajv\/dist\/core/),
      ]),
    );
    withSummary('summary: { type: string, pattern: "(" }');
    expect(schemaCheckersLoadedBy(["validate", dir], 1)).not.toEqual([]);
    withSummary("summary: { type: string, minLength: -1 }");
    expect(schemaCheckersLoadedBy(["validate", dir], 1)).toEqual(
      expect.arrayContaining([expect.stringMatching(/meta-schema-2020/)]),
    );
  });

  it("validate reports a schema it cannot compile for a missing Ajv as a problem, never a crash", () => {
    // The package installed where node_modules holds everything but Ajv.
    const copy = tempDir();
    for (const dir of ["bin", "dist"])
      cpSync(join(REPO, dir), join(copy, dir), { recursive: true });
    cpSync(join(REPO, "package.json"), join(copy, "package.json"));
    mkdirSync(join(copy, "node_modules"));
    for (const name of readdirSync(join(REPO, "node_modules")))
      if (name !== "ajv")
        symlinkSync(join(REPO, "node_modules", name), join(copy, "node_modules", name));
    const dir = tempDir();
    const stage = readFileSync(join(REPO, "stages", "plan.md"), "utf8");
    writeFileSync(
      join(dir, "plan.md"),
      stage.replace("summary: { type: string }", 'summary: { type: string, pattern: "^[A-Z]" }'),
    );
    writeFileSync(join(dir, "lint.md"), readFileSync(join(REPO, "stages", "lint.md"), "utf8"));
    const child = spawnSync(
      process.execPath,
      [join(copy, "bin", "stagechart.js"), "validate", dir],
      {
        encoding: "utf8",
      },
    );
    expect(child.status).toBe(1);
    expect(child.stderr).not.toMatch(/internal error/);
    expect(child.stdout).toMatch(/plan\.md.*StageCompletionSchemaInvalid.*'ajv\/dist\/2020\.js'/s);
    expect(child.stdout).toMatch(/2 files checked/);
  });

  it("starts with commander and picocolors from the build's own files: no CommonJS to import, no package to resolve", () => {
    for (const args of [["--version"], ["validate", "machines/", "stages/"]]) {
      const loaded = packagesLoadedBy(args);
      expect(loaded.has("commander")).toBe(false);
      expect(loaded.has("picocolors")).toBe(false);
      expect(ownFilesLoadedBy(args)).toEqual(
        expect.arrayContaining(["dist/commander.mjs", "dist/picocolors.mjs"]),
      );
    }
  });

  it("runs stagechart's own code from the build's bundle: the entry and a few shared chunks", () => {
    for (const args of [["--version"], ["validate", "machines/", "stages/"]]) {
      const own = ownFilesLoadedBy(args);
      const bundled =
        /^(bin\/stagechart\.js|dist\/(cli|zod|commander|picocolors|js-yaml|chunk-\w+)\.mjs)$/;
      expect(own.filter((file) => !bundled.test(file))).toEqual([]);
      // validate: 56 ES modules of its own without the bundle; 15 files with it.
      expect(own.length).toBeLessThan(40);
    }
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
