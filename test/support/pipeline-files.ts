import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import {
  type Diagnostic,
  type LoadResult,
  loadPipelineFile,
  type PipelineDefinition,
} from "../../src/definitions/index.js";
import { STAGES_DIR, tempDir } from "./stages.js";

export const MACHINES_DIR = resolve(import.meta.dirname, "../../machines");

/**
 * A fresh project holding a copy of the seed's bundled stages (`stages/*.md`, not the other
 * bundled pipelines' folders) plus `files` (paths relative to it).
 */
export function project(files: Record<string, string>): string {
  const dir = tempDir();
  cpSync(STAGES_DIR, join(dir, "stages"), {
    recursive: true,
    filter: (path) => path === STAGES_DIR || (dirname(path) === STAGES_DIR && path.endsWith(".md")),
  });
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  return dir;
}

/** Every diagnostic of a load as `file:line:col code`, the file relative to `dir`. */
export function placesOf(dir: string, result: LoadResult<unknown>): string[] {
  const found = result.ok ? result.warnings : result.diagnostics;
  return found.map((d) => placeOf(dir, d));
}

export const placeOf = (dir: string, d: Diagnostic): string =>
  `${relative(dir, d.file)}:${d.line}:${d.column} ${d.code}`;

/** `line:column` of the first `fragment` in `text`, or the first one after the line holding `after`. */
export function positionOf(text: string, fragment: string, after?: string): string {
  const lines = text.split("\n");
  const from = after === undefined ? 0 : lines.findIndex((l) => l.includes(after)) + 1;
  const line = lines.findIndex((l, i) => i >= from && l.includes(fragment));
  if (line === -1) throw new Error(`no ${JSON.stringify(fragment)} in the text`);
  return `${line + 1}:${(lines[line] as string).indexOf(fragment) + 1}`;
}

/** A small valid pipeline over the bundled stages, as machines/p.yaml of a project. */
export const PIPELINE = `id: small
context:
  type: object
  properties: { task: { type: string } }
entry: plan
stages:
  plan: { file: ../stages/plan.md }
  execute: { file: ../stages/execute.md }
  review: { file: ../stages/review.md }
next:
  plan: execute
  execute: review
`;

/** Loads `yaml` as machines/p.yaml of a fresh project; `places` lists its diagnostics. */
export async function load(
  yaml: string,
  files: Record<string, string> = {},
  toolNames?: readonly string[],
) {
  const dir = project({ "machines/p.yaml": yaml, ...files });
  const result = await loadPipelineFile(join(dir, "machines/p.yaml"), toolNames && { toolNames });
  return { dir, result, places: placesOf(dir, result) };
}

/** The place and code a diagnostic about machines/p.yaml has, at the first `fragment`. */
export const at = (yaml: string, fragment: string, code: string, after?: string): string =>
  `machines/p.yaml:${positionOf(yaml, fragment, after)} ${code}`;

export function loaded(result: LoadResult<PipelineDefinition>): PipelineDefinition {
  if (!result.ok) throw new Error(`expected a pipeline, got ${JSON.stringify(result.diagnostics)}`);
  return result.value;
}
