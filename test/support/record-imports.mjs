// `node --import ./record-imports.mjs …`: records every import (see import-hooks.mjs), and at exit
// every CommonJS module required from node_modules or the build's `.cjs` files (a `require` goes
// through no import hook) and every public built-in module loaded, however (as `node:<name>`).
import { appendFileSync } from "node:fs";
import { createRequire, register } from "node:module";
import { pathToFileURL } from "node:url";

register("./import-hooks.mjs", import.meta.url);

const required = createRequire(import.meta.url).cache;
process.on("exit", () => {
  const files = Object.keys(required)
    .filter((file) => file.includes("/node_modules/") || file.endsWith(".cjs"))
    .map((file) => `${pathToFileURL(file).href}\n`);
  const builtins = process.moduleLoadList
    .filter((entry) => entry.startsWith("NativeModule ") && !entry.includes(" internal/"))
    .map((entry) => `node:${entry.slice("NativeModule ".length)}\n`);
  appendFileSync(process.env.STAGECHART_IMPORT_LOG, [...files, ...builtins].join(""));
});
