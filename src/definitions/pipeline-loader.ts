import { dirname, isAbsolute, join, resolve } from "node:path";
import {
  importModule,
  type ModuleImporter,
  type ModuleLoad,
  resolveCodeReferences,
} from "./code-reference.js";
import {
  DIAGNOSTIC_CODES,
  type Diagnostic,
  diagnostic,
  type LoadResult,
  START,
} from "./diagnostics.js";
import { loadStageSource, readDefinitionText, type StageSource } from "./files.js";
import { checkJsonSchema, type JsonSchema } from "./json-schema.js";
import {
  buildPipeline,
  type PipelineSource,
  type ResolvedStage,
  type StageResolver,
} from "./pipeline-checks.js";
import type { PipelineSpec } from "./pipeline-spec.js";
import { entryUpstreamWarnings } from "./pipeline-stage-checks.js";
import type { PipelineDefinition } from "./pipeline-types.js";
import type { StageDefinition } from "./stage.js";
import type { StageEntry } from "./stage-entry-schema.js";
import { parseYamlSource } from "./yaml-source.js";
import { withJsonSchemas } from "./zod-schemas.js";

export interface PipelineLoader {
  stageFile(file: string): Promise<StageSource>;
  pipelineFile(file: string): Promise<LoadResult<PipelineDefinition>>;
  /** `baseDir` is what the spec's file paths are relative to. */
  pipelineSpec(spec: PipelineSpec, baseDir: string): Promise<LoadResult<PipelineDefinition>>;
}

/** The pipelines being loaded, outermost first: a file (by absolute path) or a spec object. */
type Chain = readonly ChainLink[];
type ChainLink = { key: string | PipelineSpec; name: string };

/** The built-in tools' names (src/tools), copied so definitions stay below the tools layer. */
export const BUILTIN_TOOL_NAMES: readonly string[] = [
  "Read",
  "Grep",
  "Glob",
  "Edit",
  "Write",
  "Bash",
];

/**
 * A loader that checks stages' tools against `toolNames` (the host's; the built-ins by default)
 * and brings in code modules with `loadModule` (imports them by default). Each distinct stage or
 * pipeline file is loaded once per loader, however many pipelines use it; entries resolve one
 * after another, so a file met again is either finished or on the chain being loaded (a cycle).
 * A pipeline spec object that loaded (with the directory its paths are relative to) is reused
 * too: its definition is the same wherever it is met. One with problems is loaded again where
 * met, so that a cycle's problem names the chain that meets it.
 */
export function createPipelineLoader(
  toolNames: readonly string[] = BUILTIN_TOOL_NAMES,
  loadModule: ModuleImporter = importModule,
): PipelineLoader {
  const stageFiles = new Map<string, Promise<StageSource>>();
  const pipelineFiles = new Map<string, Promise<LoadResult<PipelineDefinition>>>();
  const specs = new Map<PipelineSpec, Map<string, LoadResult<PipelineDefinition>>>();
  const modules = new Map<string, Promise<ModuleLoad>>();
  const importOnce = (path: string) => remember(modules, path, () => loadModule(path));

  const stageFile = (file: string) =>
    remember(stageFiles, resolve(file), () => loadStageSource(file));

  const pipelineFile = (file: string, chain: Chain) =>
    remember(pipelineFiles, resolve(file), async () => {
      const source = await readPipelineSource(file, importOnce);
      if (!source.ok) return source;
      const link = { key: resolve(file), name: file };
      return buildPipeline(source.value, resolver(dirname(file), [...chain, link]), toolNames);
    });

  const pipelineSpec = async (
    spec: PipelineSpec,
    baseDir: string,
    chain: Chain,
  ): Promise<LoadResult<PipelineDefinition>> => {
    const loaded = specs.get(spec)?.get(resolve(baseDir));
    if (loaded) return loaded;
    const plain = await withJsonSchemas(spec, specSource(spec).file);
    if (!plain.ok) return plain;
    const source = specSource(plain.spec);
    const link = { key: spec, name: source.file };
    const result = await buildPipeline(source, resolver(baseDir, [...chain, link]), toolNames);
    if (result.ok) specs.set(spec, (specs.get(spec) ?? new Map()).set(resolve(baseDir), result));
    return result;
  };

  const resolver =
    (baseDir: string, chain: Chain): StageResolver =>
    async (id, entry) => {
      const refused = "completionSchema" in entry && completionProblem(entry.completionSchema);
      if (refused)
        return {
          ok: false,
          diagnostics: [],
          code: DIAGNOSTIC_CODES.completionSchemaInvalid,
          message: refused,
        };
      switch (entry.kind) {
        case "file":
          return llmStage(
            id,
            near(baseDir, entry.file),
            await stageFile(near(baseDir, entry.file)),
            entry.outputFields,
            entry.completionSchema,
          );
        case "pipeline-file": {
          const file = near(baseDir, entry.file);
          const link = { key: resolve(file), name: file };
          return subPipeline(id, link, chain, () => pipelineFile(file, chain));
        }
        case "pipeline-spec": {
          const link = { key: entry.spec, name: specSource(entry.spec).file };
          return subPipeline(id, link, chain, () => pipelineSpec(entry.spec, baseDir, chain));
        }
        default:
          return { ok: true, stage: simpleStage(id, entry), diagnostics: [] };
      }
    };

  return {
    stageFile,
    pipelineFile: async (file) => byItself(await pipelineFile(file, [])),
    pipelineSpec: async (spec, baseDir) => byItself(await pipelineSpec(spec, baseDir, [])),
  };
}

/**
 * A pipeline loaded to run by itself, with what its entry reads of an upstream it will not
 * receive (which it does receive as a stage of another: the same definition serves both).
 */
function byItself(result: LoadResult<PipelineDefinition>): LoadResult<PipelineDefinition> {
  if (!result.ok) return result;
  const warnings = entryUpstreamWarnings(result.value);
  return warnings.length > 0 ? { ...result, warnings: [...result.warnings, ...warnings] } : result;
}

function llmStage(
  id: string,
  file: string,
  { result, locate }: StageSource,
  outputFields: string[] | undefined,
  completionSchema: JsonSchema | undefined,
): ResolvedStage {
  if (!result.ok) {
    return notLoaded(result.diagnostics, `${file} did not load; its problems are reported in it`);
  }
  const definition = completionSchema ? { ...result.value, completionSchema } : result.value;
  const stage = llm(id, definition, outputFields);
  return { ok: true, stage, diagnostics: result.warnings, locateField: locate };
}

async function subPipeline(
  id: string,
  link: ChainLink,
  chain: Chain,
  load: () => Promise<LoadResult<PipelineDefinition>>,
): Promise<ResolvedStage> {
  const looped = chain.findIndex((outer) => outer.key === link.key);
  if (looped !== -1) {
    const names = [...chain.slice(looped), link].map((outer) => outer.name);
    return {
      ok: false,
      diagnostics: [],
      code: DIAGNOSTIC_CODES.pipelineCycle,
      message: `${names.join(" → ")}: a pipeline cannot contain itself`,
    };
  }
  const result = await load();
  if (!result.ok) return notLoaded(result.diagnostics, `the sub-pipeline ${link.name} is invalid`);
  const stage = { kind: "pipeline" as const, id, pipeline: result.value };
  const { budget, grants, file } = result.value;
  // Budgets and the grants block are the run's: a sub-pipeline's are not applied where it runs
  // as a stage, and a person who set them is told so rather than left to find out.
  const unapplied = (what: string, instead: string) =>
    diagnostic(
      file ?? link.name,
      { line: 1, column: 1 },
      DIAGNOSTIC_CODES.pipelineDefinitionInvalid,
      `${what}: ${link.name}'s ${what} applies when it runs by itself, not as the stage ${id} of another pipeline; ${instead}`,
      "warning",
    );
  const grantsSet = grants.approve.length + grants.deny.length > 0 || grants.timeout !== undefined;
  return {
    ok: true,
    stage,
    diagnostics: [
      ...result.warnings,
      ...(budget === undefined
        ? []
        : [unapplied("budget", "set the run's budget (budget.run) in the pipeline that is run")]),
      ...(grantsSet
        ? [
            unapplied(
              "grants",
              "set the rules and timeout in the grants block of the pipeline that is run",
            ),
          ]
        : []),
    ],
  };
}

function simpleStage(
  id: string,
  entry: Extract<StageEntry, { kind: "stage" | "code" | "command" | "ask" }>,
) {
  switch (entry.kind) {
    case "stage":
      return llm(
        id,
        entry.completionSchema
          ? { ...entry.definition, completionSchema: entry.completionSchema }
          : entry.definition,
        entry.outputFields,
      );
    case "code":
      return { kind: "code" as const, id, run: entry.run };
    case "command":
      return { kind: "command" as const, id, command: entry.command, timeoutMs: entry.timeoutMs };
    case "ask":
      return {
        kind: "ask" as const,
        id,
        prompt: entry.prompt,
        schema: entry.schema,
        ...(entry.timeout !== undefined && { timeout: entry.timeout }),
      };
  }
}

const llm = (id: string, definition: StageDefinition, outputFields: string[] | undefined) => ({
  kind: "llm" as const,
  id,
  definition,
  ...(outputFields !== undefined && { outputFields }),
});

/** Why a stage entry's `completion` cannot be its completion tool's input schema, if it cannot. */
function completionProblem(schema: JsonSchema | undefined): string | undefined {
  if (schema === undefined) return undefined;
  if (schema.type !== "object")
    return "completion must be an object schema (`type: object`): it is the completion tool's input schema";
  const checked = checkJsonSchema(schema);
  if (checked.ok) return undefined;
  return checked.error
    .map(
      ({ path, message }) =>
        `completion${path.map((p) => `.${p}`).join("")} is not valid JSON Schema: ${message}`,
    )
    .join("; ");
}

const notLoaded = (diagnostics: Diagnostic[], message: string) => ({
  ok: false as const,
  diagnostics,
  code: DIAGNOSTIC_CODES.pipelineStageInvalid,
  message,
});

function remember<T>(cache: Map<string, Promise<T>>, key: string, load: () => Promise<T>) {
  const known = cache.get(key);
  if (known) return known;
  const loading = load();
  cache.set(key, loading);
  return loading;
}

/** A path written in a pipeline, taken relative to the pipeline's directory. */
const near = (baseDir: string, path: string): string =>
  isAbsolute(path) ? path : join(baseDir, path);

async function readPipelineSource(
  file: string,
  importOnce: (path: string) => Promise<ModuleLoad>,
): Promise<{ ok: true; value: PipelineSource } | { ok: false; diagnostics: Diagnostic[] }> {
  const read = await readDefinitionText(file, "pipeline");
  if (!read.ok) return read;
  if (!/\.ya?ml$/i.test(file)) {
    const problem = diagnostic(
      file,
      START,
      DIAGNOSTIC_CODES.pipelineFileNotYaml,
      "is not a YAML pipeline file (expected a .yaml or .yml name)",
    );
    return { ok: false, diagnostics: [problem] };
  }
  const yaml = parseYamlSource(read.text);
  if (!yaml.ok) {
    return {
      ok: false,
      diagnostics: yaml.problems.map((p) =>
        diagnostic(file, p, DIAGNOSTIC_CODES.pipelineYamlInvalid, `broken YAML: ${p.message}`),
      ),
    };
  }
  const { locate } = yaml.value;
  const { data, problems, modules } = await resolveCodeReferences(
    file,
    yaml.value.data,
    importOnce,
  );
  return {
    ok: true,
    value: { form: "yaml", file, data, locate, origin: file, code: { problems, modules } },
  };
}

/** A TypeScript spec has no source positions: its problems point at `<id>.ts (definePipeline)` 1:1 and name the path. */
function specSource(spec: PipelineSpec): PipelineSource {
  const id = typeof spec?.id === "string" && spec.id !== "" ? spec.id : "pipeline";
  return { form: "ts", file: `${id}.ts (definePipeline)`, data: spec, locate: () => START };
}
