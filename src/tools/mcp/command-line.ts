import { basename } from "node:path";
import { err, ok, type Result } from "../../errors.js";
import { toServerName } from "./naming.js";

/**
 * Splits a command line as a POSIX shell would split words, without running a shell:
 * whitespace separates words, single quotes keep everything, double quotes and backslashes
 * escape. No variables, globs or operators.
 */
export function splitCommandLine(line: string): Result<string[], string> {
  const words: string[] = [];
  let word: string | undefined;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const char = line[i] as string;
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word += char;
    } else if (char === "\\" && i + 1 < line.length) {
      word = (word ?? "") + line[++i];
    } else if (quote === '"') {
      if (char === '"') quote = undefined;
      else word += char;
    } else if (char === "'" || char === '"') {
      quote = char;
      word ??= "";
    } else if (/\s/.test(char)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? "") + char;
    }
  }
  if (quote) return err(`unclosed ${quote} in ${JSON.stringify(line)}`);
  if (word !== undefined) words.push(word);
  return ok(words);
}

/** Programs that run another program: the server's name comes from what they run. */
const LAUNCHERS = new Set([
  "node",
  "npx",
  "npm",
  "pnpm",
  "yarn",
  "bun",
  "bunx",
  "deno",
  "uv",
  "uvx",
  "python",
  "python3",
  "pipx",
  "exec",
  "run",
  "dlx",
]);

const SCRIPT_EXTENSION = /\.(?:[cm]?[jt]s|py|sh|exe)$/;

/**
 * A server's name from its command: the first word that is neither a launcher nor an option,
 * without directory, npm scope, version or script extension.
 * `npx -y @modelcontextprotocol/server-filesystem /tmp` → `server-filesystem`,
 * `node test/support/mcp-demo-server.mjs` → `mcp-demo-server`.
 */
export function serverNameFromCommand(words: readonly string[]): string {
  const named =
    words.find((word) => !word.startsWith("-") && !LAUNCHERS.has(basename(word))) ?? words[0];
  const file = basename(named ?? "mcp").replace(/@[^@/]*$/, "");
  return toServerName(file.replace(SCRIPT_EXTENSION, "") || file);
}
