import { failure, success } from "./outcome.js";
import { readTextFile } from "./root-files.js";
import type { Tool } from "./types.js";

export interface ReadArgs {
  path: string;
  /** First line to show, counting from 1. */
  offset?: number;
  /** How many lines to show. */
  limit?: number;
}

export const DEFAULT_READ_LIMIT = 2000;

export const readTool: Tool<ReadArgs> = {
  name: "Read",
  description:
    "Read a UTF-8 text file. Lines come numbered like `cat -n`; `offset` (1-based) and `limit` " +
    `(default ${DEFAULT_READ_LIMIT}) pick a window of lines, and totalLines tells how many there are. ` +
    "Paths are relative to the project root.",
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", minLength: 1, description: "File path relative to the project root" },
      offset: { type: "integer", minimum: 1, description: "First line to read (1-based)" },
      limit: { type: "integer", minimum: 1, description: "Number of lines to read" },
    },
    required: ["path"],
    additionalProperties: false,
  },
  mutates: false,
  summarize: (args) => args.path,
  async execute({ path, offset = 1, limit = DEFAULT_READ_LIMIT }, { root }) {
    const text = readTextFile(root, path);
    if (!text.ok) return text;
    const lines = splitLines(text.value);
    if (offset > Math.max(lines.length, 1)) {
      return failure(
        "ToolTerminal/InvalidToolInput",
        `offset ${offset} is past the end of ${path}, which has ${lines.length} lines`,
        { path, offset, totalLines: lines.length },
      );
    }
    const shown = lines.slice(offset - 1, offset - 1 + limit);
    const content = shown.map((line, i) => `${String(offset + i).padStart(6)}\t${line}`).join("\n");
    return success({
      path,
      content,
      fromLine: offset,
      toLine: offset - 1 + shown.length,
      totalLines: lines.length,
    });
  },
};

/** Lines as `wc -l` counts them: a final newline does not start another line. */
function splitLines(text: string): string[] {
  if (text === "") return [];
  return text.replace(/\r?\n$/, "").split(/\r?\n/);
}
