// Module hooks (node:module register) that append every resolved import's URL to the file named
// by STAGECHART_IMPORT_LOG: what a CLI command loads, for the start-up tests.
import { appendFileSync } from "node:fs";

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(process.env.STAGECHART_IMPORT_LOG, `${resolved.url}\n`);
  return resolved;
}
