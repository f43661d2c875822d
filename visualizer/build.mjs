// Bundles the visualizer's page into dist/visualizer: one script, one stylesheet, no CDN.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "dist", "visualizer");
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(out, "app.js"),
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2022",
  legalComments: "none",
  logLevel: "warning",
});
for (const file of ["index.html", "favicon.svg"]) copyFileSync(join(here, file), join(out, file));
// The chart's styles are the ones `graph --format svg` embeds (src/inspect/chart-style.ts): the
// stylesheet carries them after the page's own.
const style = await build({
  entryPoints: [join(here, "..", "src", "inspect", "chart-style.ts")],
  bundle: true,
  format: "esm",
  write: false,
  logLevel: "warning",
});
const { CHART_STYLE } = await import(
  `data:text/javascript;base64,${Buffer.from(style.outputFiles[0].text).toString("base64")}`
);
writeFileSync(
  join(out, "app.css"),
  `${readFileSync(join(here, "app.css"), "utf8")}\n/* The chart (src/inspect/chart-style.ts) */\n${CHART_STYLE}`,
);
