import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The package's root: one level above both src/ and dist/. */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Where the bundled pipelines and their scripted models live. */
export const BUNDLED_MACHINES = join(PACKAGE_ROOT, "machines");
/** The visualizer's built page (`npm run build` bundles `visualizer/` there). */
export const VISUALIZER_ASSETS = join(PACKAGE_ROOT, "dist", "visualizer");
