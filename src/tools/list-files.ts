import { isAbsolute, relative, sep } from "node:path";
import { glob } from "tinyglobby";

/** Never listed or searched: version-control internals and installed dependencies. */
const SKIPPED_DIRECTORIES = [".git", "node_modules"];

const PARENT_SEGMENT = /(^|[/\\{,])\.\.($|[/\\},])/;

/** Glob patterns are relative; one that names `..` or starts at `/` would look outside. */
export const patternLeavesRoot = (pattern: string) =>
  isAbsolute(pattern) || PARENT_SEGMENT.test(pattern);

/**
 * Files under `directory` matching `pattern`, as sorted paths relative to `root` with `/`
 * separators. Symbolic links are not followed, so the listing cannot wander out of the root.
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
  return (
    found
      .map((file) => relative(root, file))
      // A second fence behind patternLeavesRoot.
      .filter((file) => file !== "" && !file.startsWith(`..${sep}`) && !isAbsolute(file))
      .map((file) => file.split(sep).join("/"))
      .sort()
  );
}
