import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import type { ToolOutcome } from "../../src/tools/index.js";
import { makeProject, type Project } from "./project.js";

/** What an outside file holds, and the name only an outside directory has. */
export const OUTSIDE_CONTENT = "OUTSIDE-SECRET-CONTENT";
export const OUTSIDE_NAME = "outside-only-name.txt";
/** The first line of /etc/passwd, reached through links to `/` or `/etc`. */
export const PASSWD_LINE = "root:x:0:0";

/**
 * Symbolic links inside the root that lead out of it, each named by what it points at. The
 * world beside the root has `outside/` (holding OUTSIDE_NAME) and `sibling-project/`.
 */
export const ESCAPE_LINKS = [
  "rootlink", // -> /
  "etclink", // -> /etc
  "up1", // -> .. (the world)
  "src/inner/up3", // -> ../../.. (the world, from a subdirectory)
  "outdir", // -> <world>/outside, absolute
  "outdir-rel", // -> ../outside, relative
  "sibling", // -> <world>/sibling-project
  "outfile", // -> <world>/outside/OUTSIDE_NAME
  "dangling", // -> <world>/outside/not-yet.txt
  "loop-a", // -> loop-b -> loop-a
  "chain", // -> alias-chain (inside) -> <world>/outside
  "src/inner/deep-out", // -> ../../../outside
] as const;

export interface EscapeWorld extends Project {
  /**
   * Whether a call's outcome shows anything that lives outside the root: an outside file's
   * content or, in a successful output, an outside name (an error may repeat the path asked for).
   */
  leaks(outcome: ToolOutcome): boolean;
}

export function makeEscapeWorld(): EscapeWorld {
  const project = makeProject({
    "src/inner/own.txt": "inside content\n",
    "src/own.ts": "export const inside = 1;\n",
  });
  const { world, root } = project;
  const outside = join(world, "outside");
  writeFileSync(join(outside, OUTSIDE_NAME), `${OUTSIDE_CONTENT}\nroot: fake\n`);
  mkdirSync(join(world, "sibling-project"));
  writeFileSync(join(world, "sibling-project", OUTSIDE_NAME), `${OUTSIDE_CONTENT}\n`);
  const link = (target: string, name: string) => symlinkSync(target, join(root, name));
  link("/", "rootlink");
  link("/etc", "etclink");
  link("..", "up1");
  link("../../..", "src/inner/up3");
  link(outside, "outdir");
  link("../outside", "outdir-rel");
  link(join(world, "sibling-project"), "sibling");
  link(join(outside, OUTSIDE_NAME), "outfile");
  link(join(outside, "not-yet.txt"), "dangling");
  link("loop-b", "loop-a");
  link("loop-a", "loop-b");
  link("alias-chain", "chain");
  link(outside, "alias-chain");
  link("../../../outside", "src/inner/deep-out");
  link("src", "alias"); // stays inside: may be followed
  return {
    ...project,
    leaks: (outcome) => {
      const shown = outcome.ok ? JSON.stringify(outcome.output) : outcome.error.message;
      const content = shown.includes(OUTSIDE_CONTENT) || shown.includes(PASSWD_LINE);
      return content || (outcome.ok && shown.includes(OUTSIDE_NAME));
    },
  };
}

/** Whether every path in `paths` (relative to the root) resolves inside it. */
export function allInside(root: string, paths: readonly string[]): boolean {
  const realRoot = realpathSync(root);
  return paths.every((path) => {
    const rel = relative(realRoot, realpathSync(join(root, path)));
    return rel !== ".." && !rel.startsWith(`..${sep}`) && !rel.startsWith(sep);
  });
}
