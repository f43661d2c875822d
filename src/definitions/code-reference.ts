import { createHash } from "node:crypto";
import { readFileSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { isRecord } from "./contract.js";
import { DIAGNOSTIC_CODES, type DiagnosticCode } from "./diagnostics.js";
import type { DataPath } from "./yaml-positions.js";

/**
 * Code a YAML pipeline names by module: `./checks.js#planReady` is the export `planReady` of the
 * ES module `checks.js`, relative to the pipeline file. The module must lie inside the pipeline
 * file's directory (links resolved), and the export must be a function. Modules are imported
 * once per loader, when a pipeline naming them is loaded.
 */
export const CODE_REFERENCE = /^(\.{1,2}\/[^#]*[^#/]\.m?js)#([A-Za-z_$][\w$]*)$/;

const FORMAT = "a code reference: ./<module>.js#<export> (or .mjs), relative to the pipeline file";

/** The functions of an LLM stage's hooks, each of which may be a code reference. */
const HOOK_KEYS = ["gate", "assert", "exit", "refuseCompletion"] as const;

export interface CodeProblem {
  path: DataPath;
  code: DiagnosticCode;
  message: string;
}

export interface ResolvedCode {
  /** The pipeline's data with each reference replaced by the function it names. */
  data: unknown;
  problems: CodeProblem[];
  /** The content hash of each module referenced (with the relative modules it imports), by path as written. */
  modules: Record<string, string>;
}

export type ModuleLoad =
  | { ok: true; exports: Record<string, unknown>; hash: string }
  | { ok: false; code: DiagnosticCode; message: string };

/** Imports a module by its absolute path (`importModule`, once per loader). */
export type ModuleImporter = (path: string) => Promise<ModuleLoad>;

/**
 * Replaces the code references of a parsed YAML pipeline (`file`) by their functions. A place
 * that does not resolve gets a function that is never run (the load fails with its problem).
 */
export async function resolveCodeReferences(
  file: string,
  data: unknown,
  importOnce: ModuleImporter,
): Promise<ResolvedCode> {
  const resolved: ResolvedCode = { data, problems: [], modules: {} };
  if (!isRecord(data)) return resolved;
  const root = dirname(resolve(file));
  // Links resolved once for every reference of the file.
  const realRoot = realOr(root);
  const copy: Record<string, unknown> = { ...data };
  const at = async (path: DataPath, value: unknown) => {
    const found = await resolveOne(root, realRoot, value, importOnce);
    if ("fn" in found) {
      resolved.modules[found.module] = found.hash;
      return found.fn;
    }
    resolved.problems.push({ path, code: found.code, message: found.message });
    return unresolved;
  };
  if (isRecord(data.stages)) {
    const stages: Record<string, unknown> = {};
    for (const [id, entry] of Object.entries(data.stages))
      stages[id] =
        isRecord(entry) && entry.code !== undefined
          ? { ...entry, code: await at(["stages", id, "code"], entry.code) }
          : entry;
    copy.stages = stages;
  }
  if (isRecord(data.hooks)) {
    const hooks: Record<string, unknown> = {};
    for (const [id, slots] of Object.entries(data.hooks)) {
      if (!isRecord(slots)) {
        hooks[id] = slots;
        continue;
      }
      const replaced: Record<string, unknown> = { ...slots };
      for (const key of HOOK_KEYS)
        if (slots[key] !== undefined) replaced[key] = await at(["hooks", id, key], slots[key]);
      hooks[id] = replaced;
    }
    copy.hooks = hooks;
  }
  if (isRecord(data.guards)) {
    const guards: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(data.guards))
      guards[name] = await at(["guards", name], value);
    copy.guards = guards;
  }
  if (data.onTransition !== undefined)
    copy.onTransition = await at(["onTransition"], data.onTransition);
  resolved.data = copy;
  return resolved;
}

/** Stands in for a reference that did not resolve; the pipeline it is in never loads. */
function unresolved(): never {
  throw new Error("an unresolved code reference was run");
}

type Found =
  | { fn: (...args: never[]) => unknown; module: string; hash: string }
  | { code: DiagnosticCode; message: string };

async function resolveOne(
  root: string,
  realRoot: string,
  value: unknown,
  importOnce: ModuleImporter,
): Promise<Found> {
  const match = typeof value === "string" ? CODE_REFERENCE.exec(value) : null;
  if (!match) {
    const given = typeof value === "string" ? `"${value}"` : `a ${typeOf(value)}`;
    return {
      code: DIAGNOSTIC_CODES.codeReferenceInvalid,
      message: `must be ${FORMAT}, not ${given}`,
    };
  }
  const [, module = "", name = ""] = match;
  const path = inside(root, realRoot, module);
  if (!path)
    return {
      code: DIAGNOSTIC_CODES.codeReferenceOutsideRoot,
      message: `${module} is outside ${root}: a referenced module lies beside or below the pipeline file`,
    };
  const loaded = await importOnce(path);
  if (!loaded.ok) return { code: loaded.code, message: `${module} ${loaded.message}` };
  if (!Object.hasOwn(loaded.exports, name)) {
    const functions = Object.keys(loaded.exports).filter(
      (key) => typeof loaded.exports[key] === "function",
    );
    return {
      code: DIAGNOSTIC_CODES.codeExportMissing,
      message: `${module} has no export "${name}"; its functions are ${functions.join(", ") || "none"}`,
    };
  }
  const fn = loaded.exports[name];
  if (typeof fn !== "function")
    return {
      code: DIAGNOSTIC_CODES.codeExportNotFunction,
      message: `${module}#${name} is a ${typeOf(fn)}, not a function`,
    };
  return { fn: fn as (...args: never[]) => unknown, module, hash: loaded.hash };
}

/**
 * The module's real path when it lies under `root`, whose real path is `realRoot` (links
 * resolved, a missing module's directory's too).
 */
function inside(root: string, realRoot: string, module: string): string | undefined {
  const written = resolve(root, module);
  const path = realOr(written, () => join(realOr(dirname(written)), basename(written)));
  const within = relative(realRoot, path);
  return within !== "" && !within.startsWith(`..${sep}`) && within !== ".." && !isAbsolute(within)
    ? path
    : undefined;
}

function realOr(path: string, missing = () => path): string {
  try {
    return realpathSync(path);
  } catch {
    return missing();
  }
}

const unloadable = (message: string): ModuleLoad => ({
  ok: false,
  code: DIAGNOSTIC_CODES.codeModuleUnloadable,
  message,
});

const isFile = (path: string) => statSync(path, { throwIfNoEntry: false })?.isFile() === true;

export const importModule: ModuleImporter = (path) => importHashed(path, moduleHash);

/**
 * Imports a module for checks that keep no definition (`validate`): its hash, which only a
 * definition's fingerprint reads, is left empty, so its files are not read and hashed again.
 */
export const importModuleUnhashed: ModuleImporter = (path) => importHashed(path, () => "");

async function importHashed(path: string, hashOf: (path: string) => string): Promise<ModuleLoad> {
  if (!isFile(path)) return unloadable("cannot be loaded: there is no such file");
  let exports: Record<string, unknown>;
  try {
    exports = { ...(await import(pathToFileURL(path).href)) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return unloadable(`cannot be loaded: ${message.split("\n")[0]}`);
  }
  return { ok: true, exports, hash: hashOf(path) };
}

/**
 * A module read, never imported (what drawing a chart needs: no code of the pipeline runs). Every
 * export asked for is there, a stand-in that throws if run, named by its reference; the hash is
 * the module's text's, as when imported.
 */
export async function moduleUnimported(path: string): Promise<ModuleLoad> {
  if (!isFile(path)) return unloadable("cannot be loaded: there is no such file");
  const standIns = new Map<string, () => never>();
  const standIn = (name: string) => {
    const fn =
      standIns.get(name) ??
      Object.defineProperty(
        () => {
          throw new Error(`${basename(path)}#${name} was not imported: it is only drawn`);
        },
        "name",
        { value: `${basename(path)}#${name}` },
      );
    standIns.set(name, fn);
    return fn;
  };
  const exports = new Proxy<Record<string, unknown>>(
    {},
    {
      get: (_, name) => (typeof name === "string" ? standIn(name) : undefined),
      getOwnPropertyDescriptor: (_, name) =>
        typeof name === "string"
          ? { value: standIn(name), enumerable: true, configurable: true, writable: false }
          : undefined,
    },
  );
  return { ok: true, exports, hash: moduleHash(path) };
}

/** Static `from "./x.js"` and `import "./x.js"` specifiers: the modules a module brings in with it. */
const RELATIVE_IMPORT = /(?:\bfrom|\bimport)\s*["'](\.{1,2}\/[^"']+)["']/g;

/** A module and every relative module it imports, transitively: the files its code is made of. */
export function moduleClosure(entry: string): string[] {
  const seen = new Set<string>();
  const queue = [entry];
  for (let path = queue.shift(); path; path = queue.shift()) {
    if (seen.has(path)) continue;
    seen.add(path);
    for (const [, specifier = ""] of readText(path).matchAll(RELATIVE_IMPORT))
      queue.push(resolve(dirname(path), specifier));
  }
  return [...seen];
}

/** The hash of a module's text and of every relative module it imports, transitively. */
function moduleHash(entry: string): string {
  const hash = createHash("sha256");
  for (const path of moduleClosure(entry))
    hash.update(`${relative(dirname(entry), path)}\0${readText(path)}\0`);
  return hash.digest("hex").slice(0, 16);
}

/** A module's text; an import the regex misread (in a comment, say) counts as empty. */
function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

const typeOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "list" : typeof value;
