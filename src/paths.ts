import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The package's root: one level above src/ and dist/, and so above this module wherever it is
 * (src/paths.ts, tsc's dist/paths.js, or the bundle's chunk in dist/).
 */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Where the bundled pipelines and their scripted models live. */
export const BUNDLED_MACHINES = join(PACKAGE_ROOT, "machines");
/** The visualizer's built page (`npm run build` bundles `visualizer/` there). */
export const VISUALIZER_ASSETS = join(PACKAGE_ROOT, "dist", "visualizer");
/** The JSON Schema 2020-12 meta-schema's validator, compiled by `npm run build`. */
export const PRECOMPILED_META_SCHEMA_2020 = join(PACKAGE_ROOT, "dist", "meta-schema-2020.cjs");
