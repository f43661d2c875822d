import { type Dirent, readdirSync, type Stats, statSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { byCodeUnit } from "../code-unit-order.js";
import { type RegularRead, readRegularFile } from "../files.js";
import {
  DIAGNOSTIC_CODES,
  type Diagnostic,
  type DiagnosticCode,
  diagnostic,
  type LoadResult,
  type Position,
  START,
} from "./diagnostics.js";
import { splitFrontmatter } from "./frontmatter.js";
import { hasWorkflowFile, workflowKeysAmong } from "./pi-workflows/detect.js";
import { type StageDefinition, stageFromFrontmatter } from "./stage.js";
import type { DataPath } from "./yaml-positions.js";

/** Definition files are prompts and small documents, not data dumps; anything larger is almost certainly a mistake. */
export const MAX_DEFINITION_BYTES = 1024 * 1024;

const decoder = new TextDecoder("utf-8", { fatal: true });

/** What a definition file is read as: it names the file in problems, and its too-large code. */
export type DefinitionFileKind = DefinitionKind | "workflow" | "phase";

const FILE_KINDS: Record<DefinitionFileKind, { name: string; tooLarge: DiagnosticCode }> = {
  stage: { name: "stage file", tooLarge: DIAGNOSTIC_CODES.stageFileTooLarge },
  pipeline: { name: "pipeline file", tooLarge: DIAGNOSTIC_CODES.pipelineFileTooLarge },
  script: { name: "script file", tooLarge: DIAGNOSTIC_CODES.scriptFileTooLarge },
  // A pi-workflows workflow's files: its workflow.yaml and its phases.
  workflow: { name: "workflow file", tooLarge: DIAGNOSTIC_CODES.workflowFileTooLarge },
  phase: { name: "phase file", tooLarge: DIAGNOSTIC_CODES.workflowFileTooLarge },
};

/** Reads a definition file of `kind` as UTF-8 text, or explains why it cannot be one. */
export async function readDefinitionText(
  file: string,
  kind: DefinitionFileKind = "stage",
): Promise<{ ok: true; text: string } | { ok: false; diagnostics: Diagnostic[] }> {
  const { name: what, tooLarge } = FILE_KINDS[kind];
  const problem = (code: Diagnostic["code"], message: string) => ({
    ok: false as const,
    diagnostics: [diagnostic(file, START, code, message)],
  });
  let read: RegularRead;
  try {
    read = readRegularFile(file, MAX_DEFINITION_BYTES + 1);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : String(error);
    return problem(DIAGNOSTIC_CODES.fileUnreadable, `cannot be read: ${why}`);
  }
  if (read.kind === "directory") {
    return problem(DIAGNOSTIC_CODES.fileUnreadable, `is a directory, not a ${what}`);
  }
  if (read.kind === "special") {
    return problem(DIAGNOSTIC_CODES.fileUnreadable, `is ${read.what}, not a regular file`);
  }
  const { bytes, size } = read;
  if (size > MAX_DEFINITION_BYTES || bytes.length > MAX_DEFINITION_BYTES) {
    // A file that grew while it was read is known only to be larger than the limit.
    const found = size > MAX_DEFINITION_BYTES ? `is ${size} bytes` : "grew while it was read";
    return problem(tooLarge, `${found}; a ${what} is limited to ${MAX_DEFINITION_BYTES} bytes`);
  }
  if (bytes.includes(0))
    return problem(DIAGNOSTIC_CODES.fileBinary, "is a binary file (it contains NUL bytes)");
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return problem(DIAGNOSTIC_CODES.fileBinary, "is not UTF-8 text");
  }
  if (text.trim() === "") return problem(DIAGNOSTIC_CODES.fileEmpty, "is empty");
  return { ok: true, text };
}

export async function loadStageFile(file: string): Promise<LoadResult<StageDefinition>> {
  return (await loadStageSource(file)).result;
}

/** A stage file loaded, with where each frontmatter field sits, for problems a pipeline finds in it. */
export interface StageSource {
  result: LoadResult<StageDefinition>;
  locate?: (path: DataPath) => Position;
}

export async function loadStageSource(file: string): Promise<StageSource> {
  if (extname(file).toLowerCase() !== ".md") {
    const problem = diagnostic(
      file,
      START,
      DIAGNOSTIC_CODES.fileNotMarkdown,
      "is not a Markdown stage file (expected a .md name)",
    );
    return { result: { ok: false, diagnostics: [problem] } };
  }
  const read = await readDefinitionText(file);
  if (!read.ok) return { result: read };
  const split = splitFrontmatter(read.text, file);
  if (!split.ok) return { result: split };
  return { result: stageFromFrontmatter(split.value, file), locate: split.value.locate };
}

export type DefinitionKind = "stage" | "pipeline" | "script";

/** `*.script.yaml` is a scripted model, any other `*.yaml`/`*.yml` a pipeline, anything else a stage file. */
export function definitionKind(file: string): DefinitionKind {
  const name = basename(file).toLowerCase();
  if (/\.script\.ya?ml$/.test(name)) return "script";
  return /\.ya?ml$/.test(name) ? "pipeline" : "stage";
}

const SKIPPED_DIRECTORIES = new Set(["node_modules", ".git", "dist", ".stagechart"]);

/** The definition files a set of paths stands for, and the directories that could not be listed. */
export interface ExpandedPaths {
  files: string[];
  /** pi-workflows workflow directories (holding `workflow.yaml`), checked as workflows. */
  workflows: string[];
  diagnostics: Diagnostic[];
}

/**
 * Expands paths to definition files: a file stands for itself (whatever its name, so that a
 * wrong one is reported); a directory for every `*.md`, `*.yaml` and `*.yml` below it that is
 * not a directory, sorted by UTF-16 code unit (JavaScript's `<`: the same walk on every machine,
 * and no ICU collator to load, a twentieth of `validate`'s time; the diagnostics `validate`
 * prints are still sorted by file in the locale's order). A directory that cannot be listed (permissions, a path
 * too long, removed meanwhile) is a `StageFileUnreadable` diagnostic naming it; the rest is
 * still expanded. A pi-workflows workflow directory stands for itself, and a workflows root (a
 * directory with a workflow directory in it) for its workflows and the scripted models beside
 * them: their Markdown files are phases, not stage files. Directories are listed synchronously,
 * as definition files are read, each once, and an entry listed as a regular file is not looked
 * at again: an asynchronous `stat` per file was a wait on the thread pool each.
 */
export async function expandDefinitionPaths(paths: readonly string[]): Promise<ExpandedPaths> {
  const found: ExpandedPaths = { files: [], workflows: [], diagnostics: [] };
  for (const path of paths) {
    const info = statOf(path);
    if (info?.isDirectory() && hasWorkflowFile(path)) found.workflows.push(path);
    else if (info?.isDirectory()) collectDefinitionFiles(path, found);
    else found.files.push(path);
  }
  return found;
}

function collectDefinitionFiles(directory: string, found: ExpandedPaths): void {
  let entries: Dirent[];
  try {
    entries = readdirSync(directory, { withFileTypes: true });
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? String(error);
    const message = `is a directory that cannot be read: ${why}`;
    found.diagnostics.push(diagnostic(directory, START, DIAGNOSTIC_CODES.fileUnreadable, message));
    return;
  }
  entries.sort((a, b) => byCodeUnit(a.name, b.name));
  const workflows = workflowKeysAmong(directory, entries);
  if (workflows.length > 0) {
    // A root's own files are the workflows' scripted models; its other Markdown is phases.
    found.workflows.push(...workflows.map((key) => join(directory, key)));
    for (const entry of entries)
      if (!entry.isDirectory() && definitionKind(entry.name) === "script")
        found.files.push(join(directory, entry.name));
    return;
  }
  for (const entry of entries) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRECTORIES.has(entry.name)) collectDefinitionFiles(path, found);
    } else if (isDefinitionFileName(entry.name) && (entry.isFile() || isNotDirectory(path))) {
      found.files.push(path);
    }
  }
}

const isDefinitionFileName = (name: string): boolean =>
  /\.(?:md|ya?ml)$/i.test(name) && !/^readme\.md$/i.test(name);

/**
 * Links to files and special files (FIFOs, devices), which loading then refuses (a regular file
 * needs no look: its listing says what it is); linked directories are not followed, so a link
 * cycle cannot loop, and dangling links are skipped.
 */
function isNotDirectory(path: string): boolean {
  const target = statOf(path);
  return target !== undefined && !target.isDirectory();
}

/** What `path` is (links followed), or undefined if it cannot be looked at. */
function statOf(path: string): Stats | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}
