import { realpath, stat } from "node:fs/promises";
import { isAbsolute, relative, sep } from "node:path";
import { glob } from "tinyglobby";
import { isOutside } from "./sandbox.js";

/** Never listed or searched: version-control internals and installed dependencies. */
const SKIPPED_DIRECTORIES = [".git", "node_modules"];

const PARENT_SEGMENT = /(^|[/\\{,])\.\.($|[/\\},])/;

/** Glob patterns are relative; one that names `..` or starts at `/` would look outside. */
export const patternLeavesRoot = (pattern: string) =>
  isAbsolute(pattern) || PARENT_SEGMENT.test(pattern);

/**
 * Files under `directory` matching `pattern`, as sorted paths relative to `root` with `/`
 * separators. A walk does not descend into linked directories; a pattern that names a link
 * (`link/*`) goes through it, so every path found is resolved and kept only if it lands inside
 * the root. A link that dangles, loops or leads out is not listed, nor is anything but a regular
 * file (a FIFO, a socket, a device), which no tool reads.
 */
export async function listFiles(
  root: string,
  directory: string,
  pattern: string,
  signal: AbortSignal,
): Promise<string[]> {
  const found = await glob(pattern, {
    cwd: directory,
    absolute: true,
    dot: true,
    followSymbolicLinks: false,
    ignore: SKIPPED_DIRECTORIES.map((name) => `**/${name}/**`),
    signal,
  });
  // An aborted crawl ends early without an error; its partial list must not pass for complete.
  signal.throwIfAborted();
  const realRoot = await realpath(root);
  const inside = await Promise.all(found.map((file) => isRegularFileInside(realRoot, file)));
  return found
    .filter((_, index) => inside[index])
    .map((file) => relative(root, file))
    .filter((file) => file !== "")
    .map((file) => file.split(sep).join("/"))
    .sort();
}

async function isRegularFileInside(realRoot: string, file: string): Promise<boolean> {
  try {
    const real = await realpath(file);
    return !isOutside(relative(realRoot, real)) && (await stat(real)).isFile();
  } catch {
    return false;
  }
}
