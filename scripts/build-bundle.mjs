// Bundles what the package runs, from tsc's build in dist/: the library (`.` → dist/index.mjs,
// `./testing` → dist/testing.mjs) and the command line (dist/cli.mjs, which bin/stagechart.js
// runs) in one esbuild pass with code splitting, so each of stagechart's modules exists once, in
// the entry or the shared chunk (dist/chunk-<hash>.mjs) that every importer loads. Node then
// resolves, reads and compiles a few files of stagechart's own instead of a file per module
// (`validate`: 15 files instead of 56 modules, about a tenth of its start-up).
// Every package the library shares with apps stays an import of node_modules (`packages:
// "external"`): npm installs each of the package's dependencies once, and the declarations name
// several of them (zod, xstate, the AI SDK) anyway. Bundled apart, each into a file of its own
// that the chunks import: stagechart's zod, and the packages only stagechart's own code uses
// (see APART below).
// The chunks sit directly in dist/, one level below the package root like every dist/ file,
// since src/paths.ts and src/version.ts find the package root from their own location.
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import ts from "typescript";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/**
 * stagechart's zod (dist/zod.js, the functions its schemas call from zod's functional build)
 * goes into dist/zod.mjs on its own, which the chunks import. Installed,
 * `zod/mini` loads all of zod's core with it — 92 modules, 790 kB with 64 locale files and the
 * JSON Schema conversion — and `validate` took 1.4× its time; bundled, only what is called, 81 kB.
 * zod stays a dependency: the declarations name its types, and a schema from an app's own zod is
 * parsed by this copy through zod's core protocol (`_zod`), as by any other.
 */
const ZOD_BUNDLE = "./zod.mjs";
const zodApart = {
  name: "zod-apart",
  setup(context) {
    const ours = join(dist, "zod.js");
    let redirected = 0;
    context.onResolve({ filter: /[\\/]zod\.js$/ }, ({ path, resolveDir }) => {
      if (resolve(resolveDir, path) !== ours) return undefined;
      redirected += 1;
      return { path: ZOD_BUNDLE, external: true };
    });
    context.onEnd(() => {
      if (redirected === 0) throw new Error(`no import of ${ours} was pointed at ${ZOD_BUNDLE}`);
    });
  },
};

/**
 * Packages no declaration names and no app shares with stagechart, each bundled into one file of
 * dist/ that the chunks import instead of the package, so that npm does not install them with
 * it (they are development dependencies). Loaded from node_modules, a package is found through
 * its package.json and `exports`, file by file.
 * - commander and picocolors, the command line's: both are CommonJS, and an ES module importing
 *   CommonJS makes Node start its CommonJS loader and compile cjs-module-lexer to find the
 *   exports, then read commander's seven files. Their `require`s of Node's built-in modules go
 *   through a `require` made for the file (`requires`).
 * - js-yaml, the definitions' fast reader of plain YAML: only what they call, its loader (`load`,
 *   `Type`, `FAILSAFE_SCHEMA`: js-yaml's lib/ modules, CommonJS, as its index exports them)
 *   without its dumper; js-yaml's own ES build is one closure holding both, which esbuild
 *   cannot take apart.
 */
const jsYamlLib = join(
  dirname(createRequire(import.meta.url).resolve("js-yaml/package.json")),
  "lib",
);
const APART = {
  commander: { file: "./commander.mjs", entry: 'export * from "commander";', requires: true },
  picocolors: {
    file: "./picocolors.mjs",
    entry: 'export { default } from "picocolors";',
    requires: true,
  },
  "js-yaml": {
    file: "./js-yaml.mjs",
    entry: [
      `export { load } from ${JSON.stringify(join(jsYamlLib, "loader.js"))};`,
      `export { default as Type } from ${JSON.stringify(join(jsYamlLib, "type.js"))};`,
      `export { default as FAILSAFE_SCHEMA } from ${JSON.stringify(join(jsYamlLib, "schema", "failsafe.js"))};`,
    ].join("\n"),
    requires: false,
  },
};
const packagesApart = {
  name: "packages-apart",
  setup(context) {
    const names = Object.keys(APART).join("|");
    context.onResolve({ filter: new RegExp(`^(${names})$`) }, ({ path }) => ({
      path: APART[path].file,
      external: true,
    }));
  },
};

/**
 * zod's `locales` namespace (every language's messages, a third of zod's code) is never used:
 * src/zod.ts sets English from its own module. Left out of the zod bundle as an empty module.
 */
const noZodLocales = {
  name: "no-zod-locales",
  setup(context) {
    context.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, ({ importer }) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(importer)
        ? { path: "zod-locales", namespace: "no-zod-locales" }
        : undefined,
    );
    context.onLoad({ filter: /.*/, namespace: "no-zod-locales" }, () => ({
      contents: "export {};",
      loader: "js",
    }));
  },
};

await build({
  entryPoints: [join(dist, "zod.js")],
  outfile: join(dist, ZOD_BUNDLE),
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  plugins: [noZodLocales],
  logLevel: "warning",
});
for (const [name, { file, entry, requires }] of Object.entries(APART)) {
  await build({
    stdin: { contents: entry, resolveDir: root, sourcefile: `${name}.mjs` },
    outfile: join(dist, file),
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    banner: requires
      ? {
          js: 'import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);',
        }
      : undefined,
    logLevel: "warning",
  });
}
await build({
  entryPoints: {
    index: join(dist, "index.js"),
    testing: join(dist, "testing", "index.js"),
    cli: join(dist, "cli", "main.js"),
  },
  outdir: dist,
  chunkNames: "chunk-[hash]",
  outExtension: { ".js": ".mjs" },
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  plugins: [zodApart, packagesApart],
  logLevel: "warning",
});

/**
 * tsc declares every module; the package ships the declarations its exports' types reach (an
 * app cannot import the others), the rest are removed from dist/: the command line's, and
 * modules no public type mentions.
 */
const reached = new Set();
const reach = (file) => {
  if (reached.has(file)) return;
  reached.add(file);
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  for (const { fileName } of importedFiles)
    if (fileName.startsWith(".")) reach(join(dirname(file), fileName.replace(/\.js$/, ".d.ts")));
};
for (const { types } of Object.values(manifest.exports)) reach(join(root, types));
for (const file of readdirSync(dist, { recursive: true, encoding: "utf8" }))
  if (file.endsWith(".d.ts") && !reached.has(join(dist, file))) rmSync(join(dist, file));
