import { stat } from "node:fs/promises";
import { fileFailure } from "./files.js";
import { listFiles, patternLeavesRoot } from "./list-files.js";
import { cancelled, failure, success } from "./outcome.js";
import { resolveInRoot } from "./sandbox.js";
import type { Tool } from "./types.js";

export interface GlobArgs {
  pattern: string;
  /** Directory to search from, relative to the root; the root by default. */
  path?: string;
}

export const GLOB_MAX_RESULTS = 500;

export const globTool: Tool<GlobArgs> = {
  name: "Glob",
  description:
    'Find files by glob pattern (e.g. "src/**/*.ts", "*.json"), matched from `path` (default: ' +
    `the project root). Returns sorted paths relative to the root, at most ${GLOB_MAX_RESULTS}; ` +
    "dotfiles are included, .git and node_modules are skipped; `**` does not descend into linked " +
    "directories, and a link that leads out of the project root is never listed.",
  inputSchema: {
    type: "object",
    properties: {
      pattern: { type: "string", minLength: 1, description: "Glob pattern" },
      path: { type: "string", minLength: 1, description: "Directory relative to the project root" },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  mutates: false,
  summarize: (args) => args.pattern,
  async execute({ pattern, path = "." }, { root, signal }) {
    if (patternLeavesRoot(pattern)) {
      return failure(
        "ToolTerminal/SandboxEscape",
        `the pattern "${pattern}" reaches outside the project root; use a relative pattern without ".."`,
        { pattern },
      );
    }
    const directory = resolveInRoot(root, path);
    if (!directory.ok) return directory;
    try {
      if (!(await stat(directory.value)).isDirectory()) {
        return failure("ToolTerminal/NotADirectory", `${path} is not a directory`, { path });
      }
      const files = await listFiles(root, directory.value, pattern, signal);
      return success({
        files: files.slice(0, GLOB_MAX_RESULTS),
        count: files.length,
        truncated: files.length > GLOB_MAX_RESULTS,
      });
    } catch (error) {
      if (signal.aborted) return cancelled("Glob");
      return fileFailure(error, path);
    }
  },
};
