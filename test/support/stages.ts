import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const STAGES_DIR = resolve(import.meta.dirname, "../../stages");

/** The bundled `plan` stage, exactly as bundled. */
export const seedPlan = readFileSync(join(STAGES_DIR, "plan.md"), "utf8");

/** Removes a top-level frontmatter key with its indented block. */
export function withoutField(text: string, field: string): string {
  const lines = text.split("\n");
  const start = lines.findIndex((line) => line.startsWith(`${field}:`));
  if (start === -1) throw new Error(`no field ${field}`);
  let end = start + 1;
  while (end < lines.length && /^\s+\S/.test(lines[end] ?? "")) end++;
  lines.splice(start, end - start);
  return lines.join("\n");
}

/** Replaces one `key: value` frontmatter line. */
export function withLine(text: string, field: string, line: string): string {
  const pattern = new RegExp(`^${field}:.*$`, "m");
  if (!pattern.test(text)) throw new Error(`no field ${field}`);
  return text.replace(pattern, line);
}

/** The 1-based line a top-level frontmatter key sits on. */
export function lineOf(text: string, field: string): number {
  return text.split("\n").findIndex((line) => line.startsWith(`${field}:`)) + 1;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "stagechart-test-"));
}

export function writeFiles(dir: string, files: Record<string, string | Uint8Array>): void {
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
}
