import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { LoadResult } from "../definitions/diagnostics.js";
import { formatDiagnostic, isError } from "../definitions/diagnostics.js";
import { isWorkflowDirectory, loadWorkflowPipeline } from "../definitions/pi-workflows/index.js";
import { BUILTIN_TOOL_NAMES, loadPipelineFile } from "../definitions/pipeline.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { StagechartError } from "../errors.js";
import { BUNDLED_MACHINES } from "../paths.js";
import type { CliIo } from "./io.js";

const BUNDLED_NAME = /^[a-z0-9-]+$/;

/**
 * `<pipeline>` on the command line: a path (a pipeline file, or a pi-workflows workflow
 * directory), or the name of a bundled pipeline (`code-review`).
 */
export function pipelineFile(nameOrPath: string): string {
  if (existsSync(nameOrPath) || !BUNDLED_NAME.test(nameOrPath)) return nameOrPath;
  const bundled = join(BUNDLED_MACHINES, `${nameOrPath}.yaml`);
  return existsSync(bundled) ? bundled : nameOrPath;
}

/** The names of the bundled pipelines, sorted. */
function bundledPipelines(): string[] {
  return readdirSync(BUNDLED_MACHINES)
    .filter((file) => file.endsWith(".yaml") && !file.endsWith(".script.yaml"))
    .map((file) => file.slice(0, -".yaml".length))
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
  if (!existsSync(file)) {
    const error = pipelineNotFound(nameOrPath);
    io.stderr(`${error.code}: ${error.message}\n`);
    return undefined;
  }
  const toolNames = [...BUILTIN_TOOL_NAMES, ...extraToolNames];
  const loaded: LoadResult<PipelineDefinition> = isWorkflowDirectory(file)
    ? await loadWorkflowPipeline(file, toolNames, purpose)
    : await loadPipelineFile(file, { toolNames });
  const diagnostics = loaded.ok ? loaded.warnings : loaded.diagnostics;
  for (const d of diagnostics) io.stderr(`${formatDiagnostic(d)}\n`);
  if (!loaded.ok || diagnostics.some(isError)) return undefined;
  return loaded.value;
}
