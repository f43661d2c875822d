// Bundles the CLI (dist/cli/main.js, as tsc built it) into dist/cli.mjs and its lazily loaded
// chunks dist/cli-<hash>.mjs, which bin/stagechart.js runs: Node then resolves, reads and
// compiles a few files instead of some 400 modules one by one (about a third of `validate`'s
// start-up). The library entries (`.` and `./testing`) stay tsc's unbundled files.
// The chunks sit directly in dist/, one level below the package root like every dist/ file,
// since src/paths.ts and src/version.ts find the package root from their own location.
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");

/**
 * Packages loaded from node_modules at run time: native code, a peer dependency, optional ones,
 * and `yaml`, which src/definitions/yaml-positions.ts requires only when a definition is not
 * plain YAML or has a problem to report: bundled, every `validate` would compile it.
 */
const EXTERNAL = [
  "better-sqlite3",
  "pg",
  "xstate",
  "elkjs",
  "bufferutil",
  "utf-8-validate",
  "yaml",
];

/**
 * src/definitions/json-schema.ts requires Ajv's other dialects and formats lazily through
 * `createRequire`, which esbuild leaves to run time: that would load a second, unbundled Ajv
 * beside the bundled one. Here its `require` becomes the bundle's own, which `ajvApart` (below)
 * points at dist/cli-ajv.cjs: every Ajv file exists once, initialized only when first required.
 */
const bundledRequire = {
  name: "bundled-require",
  setup(context) {
    context.onLoad({ filter: /dist[\\/]definitions[\\/]json-schema\.js$/ }, ({ path }) => {
      const source = readFileSync(path, "utf8");
      const local = "const require = createRequire(import.meta.url);";
      if (!source.includes(local)) throw new Error(`${path} no longer declares: ${local}`);
      return { contents: source.replace(local, ""), loader: "js" };
    });
  },
};

/**
 * zod's `locales` namespace (every language's error messages, a third of zod's code) is not
 * used: zod configures its English messages from their own module. Left out, as an empty module.
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

/**
 * Ajv's entry points, bundled on their own into dist/cli-ajv.cjs (see `ajvApart`), each loaded
 * by its own function so that a dialect is initialized only when a schema first needs it.
 */
const AJV_ENTRIES = ["ajv", "ajv/dist/2019.js", "ajv/dist/2020.js", "ajv-formats"];
const AJV_BUNDLE = "./cli-ajv.cjs";

/**
 * Ajv's compiler and ajv-formats (some 300 kB) and the 2020-12 meta-schema validator
 * (dist/meta-schema-2020.cjs, 90 kB) are kept out of the chunks: `validate` of plain schemas
 * neither compiles nor checks one, and every chunk a command loads is parsed whether it runs or
 * not. Each Ajv entry point becomes a module that requires dist/cli-ajv.cjs at run time
 * (json-schema.js when a schema is first compiled, the MCP client's validator when it loads);
 * one bundle, required once, so every Ajv file still exists once in the process. The
 * meta-schema validator is required from dist/ beside the chunks, when a schema is compiled.
 */
const ajvApart = {
  name: "ajv-apart",
  setup(context) {
    const entry = new RegExp(
      `^(${AJV_ENTRIES.map((id) => id.replace(/[./]/g, "\\$&")).join("|")})$`,
    );
    context.onResolve({ filter: entry }, ({ path }) => ({ path, namespace: "ajv-apart" }));
    context.onResolve({ filter: /^\.\/cli-ajv\.cjs$/ }, ({ path }) => ({ path, external: true }));
    context.onResolve({ filter: /[\\/]dist[\\/]meta-schema-2020\.cjs$/ }, () => ({
      path: "./meta-schema-2020.cjs",
      external: true,
    }));
    context.onLoad({ filter: /.*/, namespace: "ajv-apart" }, ({ path }) => ({
      contents: `module.exports = require(${JSON.stringify(AJV_BUNDLE)})(${JSON.stringify(path)});`,
      loader: "js",
    }));
  },
};

/**
 * commander requires node:child_process when it loads (2 ms of every command's start), for one
 * use: spawning a command's own executable, which stagechart's commands never are. Here it is
 * required when commander first spawns one.
 */
const lazyChildProcess = {
  name: "lazy-child-process",
  setup(context) {
    context.onLoad(
      { filter: /[\\/]node_modules[\\/]commander[\\/]lib[\\/]command\.js$/ },
      ({ path }) => {
        const source = readFileSync(path, "utf8");
        const eager = "const childProcess = require('node:child_process');";
        if (!source.includes(eager)) throw new Error(`${path} no longer declares: ${eager}`);
        const lazy =
          "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };";
        const spawns = source.match(/childProcess\.\w+/g) ?? [];
        if (spawns.some((use) => use !== "childProcess.spawn")) {
          throw new Error(`${path} uses more of node:child_process than spawn`);
        }
        return { contents: source.replace(eager, lazy), loader: "js" };
      },
    );
  },
};

/**
 * stagechart's zod (dist/zod.js: the functions its schemas call, from zod's functional build) is
 * bundled on its own into dist/cli-zod.mjs, which every chunk imports. Bundled with the rest, its
 * files would share chunks with the classic zod the AI SDK and MCP SDK bring, and a chunk holds
 * whole files: `validate` then loaded 310 kB of zod for the 75 kB it runs.
 */
const ZOD_BUNDLE = "./cli-zod.mjs";
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

for (const file of readdirSync(dist))
  if (/^cli(-\w+)?\.[cm]js$/.test(file)) rmSync(join(dist, file));
await build({
  stdin: {
    contents: `const load = { ${AJV_ENTRIES.map((id) => `${JSON.stringify(id)}: () => require(${JSON.stringify(id)})`).join(", ")} };\nmodule.exports = (id) => load[id]();`,
    resolveDir: dist,
    loader: "js",
  },
  outfile: join(dist, AJV_BUNDLE),
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  logLevel: "warning",
});
await build({
  entryPoints: [join(dist, "zod.js")],
  outfile: join(dist, ZOD_BUNDLE),
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  logLevel: "warning",
});
await build({
  entryPoints: { cli: join(dist, "cli", "main.js") },
  outdir: dist,
  chunkNames: "cli-[hash]",
  outExtension: { ".js": ".mjs" },
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external: EXTERNAL,
  plugins: [bundledRequire, noZodLocales, ajvApart, zodApart, lazyChildProcess],
  // Bundled CommonJS modules that require Node's built-ins need a `require` in an ES module.
  banner: {
    js: 'import { createRequire as __cr } from "node:module"; const require = __cr(import.meta.url);',
  },
  logLevel: "warning",
});
