import { existsSync, readdirSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { loadPipeline } from "../definitions/define-pipeline.js";
import type { LoadResult } from "../definitions/diagnostics.js";
import { formatDiagnostic, isError } from "../definitions/diagnostics.js";
import { isWorkflowDirectory, loadWorkflowPipeline } from "../definitions/pi-workflows/index.js";
import { BUILTIN_TOOL_NAMES, loadPipelineFile } from "../definitions/pipeline.js";
import type { PipelineSpec } from "../definitions/pipeline-spec.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { StagechartError } from "../errors.js";
import { BUNDLED_MACHINES } from "../paths.js";
import { BUNDLED_CODE_PIPELINES } from "../pipelines/index.js";
import type { CliIo } from "./io.js";

const BUNDLED_NAME = /^[a-z0-9-]+$/;

/**
 * `<pipeline>` on the command line: a path (a pipeline file, or a pi-workflows workflow
 * directory), or the name of a bundled pipeline (`code-review`).
 */
export function pipelineFile(nameOrPath: string): string {
  if (existsSync(nameOrPath) || !BUNDLED_NAME.test(nameOrPath)) return nameOrPath;
  const bundled = join(BUNDLED_MACHINES, `${nameOrPath}.yaml`);
  if (existsSync(bundled)) return bundled;
  return Object.hasOwn(BUNDLED_CODE_PIPELINES, nameOrPath)
    ? join(BUNDLED_MACHINES, `${nameOrPath}${CODE_SUFFIX}`)
    : nameOrPath;
}

/**
 * A bundled TypeScript pipeline is compiled into the package; on the command line and in a run's
 * stored settings it stands as `<machines>/<name>.ts`, so its script is `<name>.script.yaml`
 * beside it like a YAML pipeline's.
 */
const CODE_SUFFIX = ".ts";

function bundledCodePipeline(file: string): PipelineSpec | undefined {
  if (resolve(dirname(file)) !== resolve(BUNDLED_MACHINES) || !file.endsWith(CODE_SUFFIX))
    return undefined;
  const name = basename(file, CODE_SUFFIX);
  return Object.hasOwn(BUNDLED_CODE_PIPELINES, name) ? BUNDLED_CODE_PIPELINES[name] : undefined;
}

/** Whether `file` (from `pipelineFile`) names a pipeline: a file, or a bundled TypeScript one. */
export const pipelineExists = (file: string): boolean =>
  existsSync(file) || bundledCodePipeline(file) !== undefined;

/** The names of the bundled pipelines, sorted. */
function bundledPipelines(): string[] {
  return readdirSync(BUNDLED_MACHINES)
    .filter((file) => file.endsWith(".yaml") && !file.endsWith(".script.yaml"))
    .map((file) => file.slice(0, -".yaml".length))
    .concat(Object.keys(BUNDLED_CODE_PIPELINES))
    .sort();
}

/** Why `<pipeline>` names nothing: no such file, and (for a name) no bundled pipeline either. */
export function pipelineNotFound(nameOrPath: string): StagechartError {
  const noFile = `there is no file ${nameOrPath}`;
  const message = BUNDLED_NAME.test(nameOrPath)
    ? `${noFile} and no bundled pipeline named "${nameOrPath}" (bundled: ${bundledPipelines().join(", ")})`
    : noFile;
  return new StagechartError("Validation/PipelineNotFound", message, { pipeline: nameOrPath });
}

/**
 * Loads a pipeline for a command, for a host with the built-in tools plus `extraToolNames` (its
 * MCP tools); prints its diagnostics and gives nothing back if it is missing or invalid. A
 * command that only inspects it (graph, paths, test) also takes a subworkflow-only directory.
 */
export async function loadPipelineForCli(
  nameOrPath: string,
  io: CliIo,
  extraToolNames: readonly string[] = [],
  purpose: { for: "run" | "inspection" } = { for: "run" },
): Promise<PipelineDefinition | undefined> {
  const file = pipelineFile(nameOrPath);
  if (!pipelineExists(file)) {
    const error = pipelineNotFound(nameOrPath);
    io.stderr(`${error.code}: ${error.message}\n`);
    return undefined;
  }
  const toolNames = [...BUILTIN_TOOL_NAMES, ...extraToolNames];
  const spec = bundledCodePipeline(file);
  const loaded: LoadResult<PipelineDefinition> = spec
    ? await loadPipeline(spec, { baseDir: BUNDLED_MACHINES, toolNames })
    : isWorkflowDirectory(file)
      ? await loadWorkflowPipeline(file, toolNames, purpose)
      : await loadPipelineFile(file, { toolNames });
  const diagnostics = loaded.ok ? loaded.warnings : loaded.diagnostics;
  for (const d of diagnostics) io.stderr(`${formatDiagnostic(d)}\n`);
  if (!loaded.ok || diagnostics.some(isError)) return undefined;
  return loaded.value;
}
