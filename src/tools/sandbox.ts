import { readlinkSync, realpathSync } from "node:fs";

// The system's realpath: one call, where the JavaScript one looks at every component in turn.
const realpath = realpathSync.native;

import { basename, dirname, isAbsolute, join, normalize, relative, resolve, sep } from "node:path";
import { err, ok, type Result, StagechartError } from "../errors.js";

/** More links in a chain than this is a loop (Linux allows 40). */
const MAX_LINK_HOPS = 40;

/**
 * The absolute, symlink-resolved location of `userPath` (relative to `root`), or
 * `ToolTerminal/SandboxEscape` if it is, or could lead, anywhere outside the root. A path that
 * cannot be resolved (a link loop, no permission) is denied too: only a path proven to be inside
 * passes. Synchronous so guard rules can call it; it only resolves links, it reads no files.
 */
export function resolveInRoot(root: string, userPath: string): Result<string, StagechartError> {
  const deny = (why: string) =>
    err(
      new StagechartError("ToolTerminal/SandboxEscape", `the path "${userPath}" ${why}`, {
        path: userPath,
      }),
    );
  if (userPath.includes("\0")) return deny("contains a NUL byte");
  if (isAbsolute(userPath)) {
    return deny("is absolute; paths must be relative to the project root");
  }
  if (isOutside(normalize(userPath))) return deny("leaves the project root");
  let realRoot: string;
  let resolved: string;
  try {
    realRoot = realpath(root);
    resolved = resolveLinks(resolve(realRoot, userPath), 0);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    return deny(`cannot be resolved safely (${code})`);
  }
  if (isOutside(relative(realRoot, resolved))) {
    return deny(`resolves through a symbolic link to ${resolved}, outside the project root`);
  }
  return ok(resolved);
}

/** Whether a path relative to the root (as `path.relative` gives it) lies outside the root. */
export function isOutside(relativePath: string): boolean {
  return relativePath === ".." || relativePath.startsWith(`..${sep}`) || isAbsolute(relativePath);
}

/** realpath of `path`; for a path that does not exist yet, where it would be created. */
function resolveLinks(path: string, hops: number): string {
  try {
    return realpath(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
  }
  // A dangling link: writing to it would create its target, so resolve the target instead.
  const target = readLinkOrUndefined(path);
  if (target !== undefined) {
    if (hops >= MAX_LINK_HOPS) throw Object.assign(new Error("too many links"), { code: "ELOOP" });
    return resolveLinks(resolve(dirname(path), target), hops + 1);
  }
  return join(resolveLinks(dirname(path), hops), basename(path));
}

function readLinkOrUndefined(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}
