// Bundles what the package runs, from tsc's build in dist/: the library (`.` → dist/index.mjs,
// `./testing` → dist/testing.mjs) and the command line (dist/cli.mjs, which bin/stagechart.js
// runs) in one esbuild pass with code splitting, so each of stagechart's modules exists once, in
// the entry or the shared chunk (dist/chunk-<hash>.mjs) that every importer loads. Node then
// resolves, reads and compiles a few files of stagechart's own instead of a file per module
// (`validate`: 15 files instead of 56 modules, about a tenth of its start-up).
// Every package stays an import of node_modules (`packages: "external"`): npm installs each of
// the package's dependencies once, and the declarations name several of them (zod, xstate, the
// AI SDK) anyway.
// The chunks sit directly in dist/, one level below the package root like every dist/ file,
// since src/paths.ts and src/version.ts find the package root from their own location.
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import ts from "typescript";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

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
