// The package as npm publishes it: `npm pack`ed (from the build `npm test` runs first), unpacked
// into a fresh TypeScript app's node_modules beside only what npm would install with it (its
// dependencies and the xstate peer), then type-checked, run and used from the command line.
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { demoProject, REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/stages.js";

interface Manifest {
  name: string;
  main?: string;
  types?: string;
  exports: Record<string, { types: string; default: string }>;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

const REPO_MODULES = join(REPO_ROOT, "node_modules");
const readManifest = (dir: string): Manifest =>
  JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest;

/** Every file under `dir`, as paths relative to it. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((file) =>
    statSync(join(dir, file)).isFile(),
  );

/** `npm pack` of the checkout (as built), unpacked where npm installs it in `app`. */
function installPacked(app: string): string {
  const packs = tempDir();
  const pack = spawnSync("npm", ["pack", "--ignore-scripts", "--pack-destination", packs], {
    cwd: REPO_ROOT,
    encoding: "utf8",
  });
  expect(pack.status, pack.stderr).toBe(0);
  const [tarball] = readdirSync(packs);
  const installed = join(app, "node_modules", "stagechart");
  mkdirSync(installed, { recursive: true });
  const untar = spawnSync(
    "tar",
    ["-xzf", join(packs, tarball as string), "-C", installed, "--strip-components=1"],
    { encoding: "utf8" },
  );
  expect(untar.status, untar.stderr).toBe(0);
  return installed;
}

/** Links `name` from the checkout's node_modules into the app's, as npm would install it. */
function linkModule(app: string, name: string): void {
  const link = join(app, "node_modules", name);
  mkdirSync(dirname(link), { recursive: true });
  symlinkSync(join(REPO_MODULES, name), link, "dir");
}

/**
 * The packages npm installs with `names`: them and, recursively, their dependencies (as this
 * checkout resolved them; nested copies are the same packages for this purpose).
 */
function installedWith(names: string[]): Set<string> {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name) || !existsSync(join(REPO_MODULES, name, "package.json"))) return;
    seen.add(name);
    const manifest = readManifest(join(REPO_MODULES, name));
    for (const dep of Object.keys({
      ...manifest.dependencies,
      ...manifest.optionalDependencies,
    }))
      visit(dep);
  };
  for (const name of names) visit(name);
  return seen;
}

const APP_SOURCE = `import { readFileSync } from "node:fs";
import {
  createHost,
  loadPipelineFile,
  MemoryAuditLog,
  type RunResult,
  resolveModelSpec,
  startRun,
} from "stagechart";
import { type PathList, pipelinePaths } from "stagechart/testing";

const [pipelineFile, scriptFile, root] = process.argv.slice(2) as [string, string, string];
const model = await resolveModelSpec(\`scripted:\${scriptFile}\`);
if (!model.ok) throw model.error;
const pipeline = await loadPipelineFile(pipelineFile);
if (!pipeline.ok) throw new Error(pipeline.diagnostics.map((d) => d.message).join("\\n"));
const paths: PathList = pipelinePaths(pipeline.value);
const host = createHost({ model: model.value, audit: new MemoryAuditLog(), root });
const run = await startRun(pipeline.value, { host, task: "refactor auth module" });
if (!run.ok) throw run.error;
const result: RunResult = await run.value.result;
const stages: string[] = Object.keys(result.results);
const auth = readFileSync(\`\${root}/src/auth.ts\`, "utf8");
console.log(JSON.stringify({ status: result.status, stages, paths: paths.paths.length, edited: auth.length > 0 }));
`;

let app: string;
let installed: string;

beforeAll(() => {
  app = tempDir();
  installed = installPacked(app);
  const manifest = readManifest(installed);
  // What npm installs with the package: its dependencies and the peer the app installs beside it.
  // The app's own: typescript to check it, and @types/node, as in any Node TypeScript app.
  for (const name of [
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}),
    "typescript",
    "@types/node",
  ])
    linkModule(app, name);
  writeFileSync(join(app, "package.json"), JSON.stringify({ type: "module", private: true }));
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: "nodenext",
        moduleResolution: "nodenext",
        target: "es2022",
        skipLibCheck: false,
        noEmitOnError: true,
        types: ["node"],
        outDir: "out",
      },
      include: ["src"],
    }),
  );
  mkdirSync(join(app, "src"));
  writeFileSync(join(app, "src", "main.ts"), APP_SOURCE);
}, 60_000);

describe("the packed package, installed in a TypeScript app", () => {
  it("type-checks the app with strict library checks (skipLibCheck off) and runs it to done", () => {
    const tsc = spawnSync(
      process.execPath,
      [join(app, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"],
      { cwd: app, encoding: "utf8" },
    );
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
    const project = demoProject();
    const machines = join(installed, "machines");
    const ran = spawnSync(
      process.execPath,
      [
        "out/main.js",
        join(machines, "code-review.yaml"),
        join(machines, "code-review.script.yaml"),
        project,
      ],
      { cwd: app, encoding: "utf8" },
    );
    expect(ran.status, ran.stderr).toBe(0);
    expect(JSON.parse(ran.stdout)).toMatchObject({
      status: "done",
      stages: expect.arrayContaining(["plan", "execute", "review"]),
      edited: true,
    });
    expect(JSON.parse(ran.stdout).paths).toBeGreaterThan(0);
  });

  it("embeds a durable pipeline: a snapshot saved from an audit listener mid-step restores in a second process, which finishes", () => {
    // The repository's embedding app (test/runtime/support/embed-child.mjs), importing the
    // installed package instead of the checkout's build.
    const child = readFileSync(join(REPO_ROOT, "test/runtime/support/embed-child.mjs"), "utf8");
    const imported = '"../../../dist/index.mjs"';
    expect(child).toContain(imported);
    writeFileSync(join(app, "embed.mjs"), child.replace(imported, '"stagechart"'));
    const project = demoProject();
    const machines = join(installed, "machines");
    const embed = (cut?: string) =>
      spawnSync(
        process.execPath,
        [
          "embed.mjs",
          join(project, "app.json"),
          join(project, "runs.db"),
          project,
          join(machines, "code-review.yaml"),
          join(machines, "code-review.script.yaml"),
          ...(cut ? [cut] : []),
        ],
        { cwd: app, encoding: "utf8" },
      );
    const first = embed("StageSetup:plan");
    expect(first.signal, first.stderr).toBe("SIGKILL");
    expect(first.stdout).toMatch(/^E StageSetup plan$/m);
    const second = embed();
    expect(second.status, second.stderr).toBe(0);
    const end = second.stdout.split("\n").find((line) => line.startsWith("R "));
    expect(JSON.parse(end?.slice(2) ?? "null")).toMatchObject({ app: "finished", status: "done" });
    expect(second.stdout).not.toMatch(/^E RunStarted/m);
  });

  it("runs the installed command: validate checks the bundled pipelines and stages", () => {
    const validate = spawnSync(
      process.execPath,
      [
        join(installed, "bin/stagechart.js"),
        "validate",
        "node_modules/stagechart/machines/",
        "node_modules/stagechart/stages/",
      ],
      { cwd: app, encoding: "utf8" },
    );
    expect(validate.status, validate.stdout + validate.stderr).toBe(0);
    expect(validate.stdout).toMatch(/\d+ files checked/);
  });

  it("names its entry points for resolvers without `exports` too", () => {
    const manifest = readManifest(installed);
    const root = manifest.exports["."];
    expect(manifest.main && resolve(installed, manifest.main)).toBe(
      root && resolve(installed, root.default),
    );
    expect(manifest.types && resolve(installed, manifest.types)).toBe(
      root && resolve(installed, root.types),
    );
    for (const target of Object.values(manifest.exports).flatMap((e) => [e.types, e.default]))
      expect(existsSync(join(installed, target)), target).toBe(true);
  });

  it("builds nothing when installed (from the registry or from git): the tarball is built when packed", () => {
    const scripts = readManifest(installed).scripts ?? {};
    for (const hook of ["preinstall", "install", "postinstall", "prepare"])
      expect(scripts[hook], hook).toBeUndefined();
    expect(scripts.prepack).toMatch(/npm run build/);
  });
});

describe("what the packed package holds", () => {
  it("has source maps only whose sources it ships (or none)", () => {
    const unresolved = filesUnder(installed)
      .filter((file) => file.endsWith(".map"))
      .flatMap((map) => {
        const { sources, sourcesContent } = JSON.parse(
          readFileSync(join(installed, map), "utf8"),
        ) as { sources: string[]; sourcesContent?: (string | null)[] };
        return sources.flatMap((source, i) =>
          sourcesContent?.[i] != null || existsSync(resolve(installed, dirname(map), source))
            ? []
            : [`${map} → ${source}`],
        );
      });
    expect(unresolved).toEqual([]);
  });

  it("holds each of its own modules once (the command line and the library share them)", () => {
    // esbuild heads each module it bundles with a `// <path>` line (twice when it hoists the
    // module's imports to the top of the chunk); a file of its own that is not a bundle counts
    // as itself.
    const copies = new Map<string, string[]>();
    const scripts = filesUnder(installed).filter(
      (file) => /\.[cm]?js$/.test(file) && !file.startsWith("dist/visualizer/"),
    );
    for (const file of scripts) {
      const bundled = readFileSync(join(installed, file), "utf8")
        .split("\n")
        .flatMap((line) => /^\/\/ ((?:dist|src)\/\S+)$/.exec(line)?.[1] ?? []);
      const modules = bundled.length > 0 ? new Set(bundled) : [file];
      for (const module of modules) {
        const name = module.replace(/^(dist|src)\//, "").replace(/\.(ts|[cm]?js)$/, "");
        copies.set(name, [...(copies.get(name) ?? []), file]);
      }
    }
    expect(copies.size).toBeGreaterThan(100);
    expect([...copies].filter(([, files]) => files.length > 1)).toEqual([]);
  });

  it("bundles no package that npm also installs with it but zod's functional build, whose calls it bundles apart", () => {
    const manifest = readManifest(installed);
    const alsoInstalled = installedWith([
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
    ]);
    const bundled = new Map<string, Set<string>>();
    for (const file of filesUnder(installed).filter((f) => /\.[cm]?js$/.test(f))) {
      for (const line of readFileSync(join(installed, file), "utf8").split("\n")) {
        const name = /^\/\/ (?:\S*\/)?node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(line)?.[1];
        if (name) bundled.set(name, (bundled.get(name) ?? new Set()).add(file));
      }
    }
    expect([...bundled.keys()].filter((name) => alsoInstalled.has(name))).toEqual(["zod"]);
    expect([...(bundled.get("zod") ?? [])]).toEqual(["dist/zod.mjs"]);
  });

  it("imports only packages npm installs with it: its dependencies, the xstate peer and Node's own modules", () => {
    // A package the build bundles apart (commander, picocolors, js-yaml's loader) is a
    // development dependency: the shipped code must import it from the build's own file.
    const manifest = readManifest(installed);
    const installable = new Set([
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
    ]);
    const imported = new Map<string, Set<string>>();
    const scripts = filesUnder(installed).filter(
      (file) => /\.[cm]?js$/.test(file) && !file.startsWith("dist/visualizer/"),
    );
    for (const file of scripts)
      for (const [, from, bare] of readFileSync(join(installed, file), "utf8").matchAll(
        /(?<!["'])\b(?:from|import\s*\(|require\s*\()\s*["']([^"'\s./][^"'\s]*)["']|^import\s*["']([^"'\s./][^"'\s]*)["']/gm,
      )) {
        const specifier = (from ?? bare) as string;
        const name = specifier
          .split("/")
          .slice(0, specifier.startsWith("@") ? 2 : 1)
          .join("/");
        if (specifier.startsWith("node:") || builtinModules.includes(name)) continue;
        imported.set(name, (imported.get(name) ?? new Set()).add(file));
      }
    expect([...imported.keys()]).toEqual(expect.arrayContaining(["zod", "xstate", "yaml"]));
    expect([...imported].filter(([name]) => !installable.has(name))).toEqual([]);
  });

  it("declares only types that npm installs with it: no development-only @types package", () => {
    const manifest = readManifest(installed);
    const installable = installedWith([
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}),
    ]);
    /** Whether an app with the package installed finds `name`'s types. */
    const typed = (name: string): boolean => {
      if (!installable.has(name)) return false;
      const own = readManifest(join(REPO_MODULES, name)) as Manifest & { typings?: string };
      const typesOf = `@types/${name.replace(/^@([^/]+)\//, "$1__")}`;
      return (
        Boolean(own.types ?? own.typings) ||
        JSON.stringify(own.exports ?? {}).includes('"types"') ||
        existsSync(join(REPO_MODULES, name, "index.d.ts")) ||
        installable.has(typesOf)
      );
    };
    const imported = new Set<string>();
    for (const file of filesUnder(installed).filter((f) => f.endsWith(".d.ts")))
      for (const m of readFileSync(join(installed, file), "utf8").matchAll(
        /(?:from |import\()"((?:@[^/"]+\/)?[^./"][^/"]*)/g,
      ))
        if (!m[1]?.startsWith("node:")) imported.add(m[1] as string);
    expect(imported.size).toBeGreaterThan(0);
    expect([...imported].filter((name) => !typed(name))).toEqual([]);
  });
});
