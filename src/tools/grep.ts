import { stat } from "node:fs/promises";
import { relative, sep } from "node:path";
import { specialKind } from "../files.js";
import { fileFailure, notARegularFile } from "./files.js";
import { listFiles, patternLeavesRoot } from "./list-files.js";
import { cancelled, failure, success } from "./outcome.js";
import { readTextFile } from "./root-files.js";
import { resolveInRoot } from "./sandbox.js";
import type { Tool } from "./types.js";

export interface GrepArgs {
  /** A JavaScript regular expression, matched against each line. */
  pattern: string;
  /** File or directory to search, relative to the root; the root by default. */
  path?: string;
  /** Only files matching this glob; a glob without `/` matches file names at any depth. */
  glob?: string;
  ignoreCase?: boolean;
  maxResults?: number;
}

export const DEFAULT_GREP_RESULTS = 200;
/** A matching line is shown up to this many characters, so one minified line cannot flood the output. */
export const MAX_MATCH_LINE_CHARS = 500;

export const grepTool: Tool<GrepArgs> = {
  name: "Grep",
  description:
    "Search file contents with a JavaScript regular expression, line by line. Returns " +
    '"path:line: text" lines (paths relative to the project root) and their count. `glob` ' +
    'filters files ("*.ts" at any depth, "src/**/*.ts" from `path`). Binary files, files over ' +
    "10 MiB, .git and node_modules are skipped; a link that leads out of the project root is " +
    "never read.",
  inputSchema: {
    type: "object",
    properties: {
      pattern: { type: "string", minLength: 1, description: "JavaScript regular expression" },
      path: { type: "string", minLength: 1, description: "File or directory to search" },
      glob: { type: "string", minLength: 1, description: "Only search files matching this glob" },
      ignoreCase: { type: "boolean" },
      maxResults: { type: "integer", minimum: 1, maximum: 5000 },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  mutates: false,
  summarize: (args) => args.pattern,
  async execute(args, { root, signal }) {
    const {
      pattern,
      path = ".",
      glob,
      ignoreCase = false,
      maxResults = DEFAULT_GREP_RESULTS,
    } = args;
    let regex: RegExp;
    try {
      regex = new RegExp(pattern, ignoreCase ? "i" : "");
    } catch (error) {
      return failure(
        "ToolTerminal/InvalidToolInput",
        `the pattern is not a valid JavaScript regular expression: ${(error as Error).message}`,
        { pattern },
      );
    }
    if (glob !== undefined && patternLeavesRoot(glob)) {
      const message = `the glob "${glob}" reaches outside the project root`;
      return failure("ToolTerminal/SandboxEscape", message, { glob });
    }
    const target = resolveInRoot(root, path);
    if (!target.ok) return target;
    let files: string[];
    try {
      const info = await stat(target.value);
      if (!info.isDirectory() && !info.isFile()) {
        return { ok: false, error: notARegularFile(path, specialKind(info)) };
      }
      files = info.isDirectory()
        ? await listFiles(root, target.value, fileFilter(glob), signal)
        : [relative(root, target.value).split(sep).join("/")];
    } catch (error) {
      return signal.aborted ? cancelled("Grep") : fileFailure(error, path);
    }

    const matches: string[] = [];
    let truncated = false;
    for (const file of files) {
      if (signal.aborted) return cancelled("Grep");
      const text = readTextFile(root, file);
      if (!text.ok) continue;
      for (const [index, line] of text.value.split(/\r?\n/).entries()) {
        if (!regex.test(line)) continue;
        truncated = matches.length === maxResults;
        if (truncated) break;
        matches.push(`${file}:${index + 1}: ${shorten(line)}`);
      }
      if (truncated) break;
    }
    return success({ matches: matches.join("\n"), count: matches.length, truncated });
  },
};

function fileFilter(glob: string | undefined): string {
  if (glob === undefined) return "**/*";
  return glob.includes("/") ? glob : `**/${glob}`;
}

const shorten = (line: string) =>
  line.length > MAX_MATCH_LINE_CHARS ? `${line.slice(0, MAX_MATCH_LINE_CHARS)}…` : line;
