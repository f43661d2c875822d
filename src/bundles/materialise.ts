import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fingerprint } from "../compiler/definition-hash.js";
import { formatDiagnostic, isError, type LoadResult } from "../definitions/diagnostics.js";
import { isWorkflowDirectory } from "../definitions/pi-workflows/detect.js";
import { loadWorkflowPipeline } from "../definitions/pi-workflows/load.js";
import { BUILTIN_TOOL_NAMES, loadPipelineFile } from "../definitions/pipeline.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { DefinitionBundle } from "../runtime/run-records.js";

/** Where bundles are written to be loaded: the user's cache (`$XDG_CACHE_HOME` or ~/.cache). */
export function definitionsCache(): string {
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cache, "stagechart", "definitions");
}

/**
 * Writes a bundle's files under `<cacheDir>/<hash>/`, read-only, and gives the path of its entry.
 * Every path must stay inside that folder (`Validation/DefinitionPathUnsafe` otherwise) and be
 * one file only, neither another's folder nor another's name written differently
 * (`Validation/DefinitionPathClash`): faults of the bundle, on any machine. A cache this machine
 * cannot write (unwritable, full, not a folder) is `Session/DefinitionCacheUnavailable`: a
 * fault of this machine. A bundle already written is used as it is: the folder appears whole, by
 * one rename, so workers writing the same bundle at once cannot see it half done. The folder is
 * named by the definition's hash and a digest of the bundle's files: one definition bundled from
 * another layout (its files under `pipelines/` rather than `machines/`, say) has the same hash,
 * and gets a folder of its own.
 */
export function materialiseBundle(
  hash: string,
  bundle: DefinitionBundle,
  cacheDir: string = definitionsCache(),
): Result<string> {
  if (!/^[A-Za-z0-9_-]{1,128}$/.test(hash)) return err(unsafePath(hash, "not a definition hash"));
  const dir = resolve(cacheDir, `${hash}-${bundleDigest(bundle)}`);
  for (const path of [bundle.entry, ...Object.keys(bundle.files)]) {
    const why = unsafeReason(dir, path);
    if (why) return err(unsafePath(path, why));
  }
  const clash = clashingPath(dir, Object.keys(bundle.files));
  if (clash) return err(pathClash(clash));
  if (!existsSync(dir)) {
    const written = writeWhole(dir, bundle.files);
    if (!written.ok) return written;
  }
  return ok(join(dir, bundle.entry));
}

/** A short digest of a bundle's entry and files, paths and contents. */
function bundleDigest({ entry, files }: DefinitionBundle): string {
  const digest = createHash("sha256").update(entry);
  for (const path of Object.keys(files).sort()) digest.update(`\0${path}\0${files[path] ?? ""}`);
  return digest.digest("base64url").slice(0, 16);
}

/** Why `path` may not be written under `dir`, if it may not. */
function unsafeReason(dir: string, path: string): string | undefined {
  if (path === "" || path.includes("\0")) return "an empty path or one with a NUL byte";
  if (isAbsolute(path)) return "an absolute path";
  const inside = relative(dir, resolve(dir, path));
  if (inside === "" || inside.startsWith("..") || isAbsolute(inside))
    return "it leads outside the bundle's folder";
  return undefined;
}

/** A path of `paths` that names the same file as another, or a folder another is inside. */
function clashingPath(dir: string, paths: readonly string[]): string | undefined {
  const files = new Set<string>();
  for (const path of paths) {
    const inside = relative(dir, resolve(dir, path));
    if (files.has(inside)) return path;
    files.add(inside);
  }
  for (const path of paths) {
    const parts = relative(dir, resolve(dir, path)).split(sep);
    if (parts.slice(1).some((_, end) => files.has(parts.slice(0, end + 1).join(sep)))) return path;
  }
  return undefined;
}

function writeWhole(dir: string, files: Record<string, string>): Result<void> {
  const cacheDir = dirname(dir);
  let staging: string;
  try {
    mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
    staging = mkdtempSync(`${dir}.partial-`);
  } catch (cause) {
    return err(cacheUnavailable(cacheDir, cause));
  }
  try {
    for (const [path, text] of Object.entries(files)) {
      const file = join(staging, path);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text, { mode: 0o444 });
      chmodSync(file, 0o444);
    }
    renameSync(staging, dir);
    return ok(undefined);
  } catch (cause) {
    rmSync(staging, { recursive: true, force: true });
    // Another process wrote the same hash first: its folder holds the same files.
    if (existsSync(dir)) return ok(undefined);
    return err(cacheUnavailable(cacheDir, cause));
  }
}

/**
 * Loads a stored definition as the run was queued with it: written out (`materialiseBundle`),
 * loaded as its kind (a YAML pipeline or a pi-workflows directory), and checked to be the
 * definition `hash` names — `Session/DefinitionMismatch` if it loads into another.
 */
export async function loadBundle(
  hash: string,
  bundle: DefinitionBundle,
  options: { cacheDir?: string; mcpToolNames?: readonly string[] } = {},
): Promise<Result<PipelineDefinition>> {
  const entry = materialiseBundle(hash, bundle, options.cacheDir);
  if (!entry.ok) return entry;
  const toolNames = [...BUILTIN_TOOL_NAMES, ...(options.mcpToolNames ?? [])];
  const loaded: LoadResult<PipelineDefinition> = isWorkflowDirectory(entry.value)
    ? await loadWorkflowPipeline(entry.value, toolNames)
    : await loadPipelineFile(entry.value, { toolNames });
  const problems = loaded.ok ? loaded.warnings.filter(isError) : loaded.diagnostics;
  if (!loaded.ok || problems.length > 0)
    return err(
      new StagechartError(
        "Validation/DefinitionInvalid",
        `stored definition ${hash} does not load: ${problems.map(formatDiagnostic).join("; ")}`,
        { definitionHash: hash },
      ),
    );
  const found = fingerprint(loaded.value).hash;
  if (found !== hash)
    return err(
      new StagechartError(
        "Session/DefinitionMismatch",
        `stored definition ${hash} loads into definition ${found}`,
        { definitionHash: hash, found },
      ),
    );
  return ok(loaded.value);
}

const unsafePath = (path: string, why: string): StagechartError =>
  new StagechartError(
    "Validation/DefinitionPathUnsafe",
    `the stored definition's path ${JSON.stringify(path)} is refused: ${why}`,
    { path },
  );

const pathClash = (path: string): StagechartError =>
  new StagechartError(
    "Validation/DefinitionPathClash",
    `the stored definition's path ${JSON.stringify(path)} is refused: it names a file the bundle also has, or is inside one of its files`,
    { path },
  );

const cacheUnavailable = (cacheDir: string, cause: unknown): StagechartError => {
  const { code, message } = cause as NodeJS.ErrnoException;
  return new StagechartError(
    "Session/DefinitionCacheUnavailable",
    `this machine cannot write stored definitions under ${cacheDir}: ${message ?? String(cause)}`,
    { cacheDir, ...(code && { errno: code }) },
  );
};
