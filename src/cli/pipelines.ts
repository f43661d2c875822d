import { existsSync } from "node:fs";
import { join } from "node:path";
import { formatDiagnostic, isError } from "../definitions/diagnostics.js";
import { BUILTIN_TOOL_NAMES, loadPipelineFile } from "../definitions/pipeline.js";
import type { PipelineDefinition } from "../definitions/pipeline-types.js";
import { BUNDLED_MACHINES } from "../paths.js";
import type { CliIo } from "./io.js";

/** `<pipeline>` on the command line: a path, or the name of a bundled pipeline (`code-review`). */
export function pipelineFile(nameOrPath: string): string {
  if (existsSync(nameOrPath)) return nameOrPath;
  const bundled = join(BUNDLED_MACHINES, `${nameOrPath}.yaml`);
  return /^[a-z0-9-]+$/.test(nameOrPath) && existsSync(bundled) ? bundled : nameOrPath;
}

/**
 * Loads a pipeline for a command, for a host with the built-in tools plus `extraToolNames` (its
 * MCP tools); prints its diagnostics and gives nothing back if it is invalid.
 */
export async function loadPipelineForCli(
  nameOrPath: string,
  io: CliIo,
  extraToolNames: readonly string[] = [],
): Promise<{ pipeline: PipelineDefinition; file: string } | undefined> {
  const file = pipelineFile(nameOrPath);
  const loaded = await loadPipelineFile(file, {
    toolNames: [...BUILTIN_TOOL_NAMES, ...extraToolNames],
  });
  const diagnostics = loaded.ok ? loaded.warnings : loaded.diagnostics;
  for (const d of diagnostics) io.stderr(`${formatDiagnostic(d)}\n`);
  if (!loaded.ok || diagnostics.some(isError)) return undefined;
  return { pipeline: loaded.value, file };
}
