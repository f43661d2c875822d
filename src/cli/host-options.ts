import { isAbsolute, resolve } from "node:path";
import type { Result } from "../errors.js";
import { MemoryAuditLog } from "../inspect/audit.js";
import { resolveModelSpec } from "../models/spec.js";
import { createHost, type Host } from "../runtime/host.js";
import { terminalInteractor } from "../runtime/interactors.js";
import type { SecurityMode } from "../runtime/security-mode.js";
import { type AnyTool, builtinTools, type McpSources } from "../tools/index.js";

/** What a run needs to be run again by `resume`: stored with the run. */
export interface HostSettings {
  pipelineFile: string;
  /** `scripted:<absolute file>` or another model spec. */
  model: string;
  root: string;
  mode: SecurityMode;
  headless: boolean;
  /** The run's MCP servers (`--mcp`, `--mcp-config`), started again by `resume`. */
  mcp?: McpSources;
}

export function settingsFor(flags: {
  pipelineFile: string;
  model?: string;
  root?: string;
  mode: SecurityMode;
  headless?: boolean;
  mcp?: McpSources | undefined;
}): HostSettings {
  const model = flags.model ?? `scripted:${flags.pipelineFile.replace(/\.ya?ml$/, ".script.yaml")}`;
  const [kind, ...rest] = model.split(":");
  const target = rest.join(":");
  return {
    pipelineFile: resolve(flags.pipelineFile),
    model:
      kind === "scripted" && target && !isAbsolute(target) ? `scripted:${resolve(target)}` : model,
    root: resolve(flags.root ?? process.cwd()),
    mode: flags.mode,
    headless: Boolean(flags.headless),
    ...(flags.mcp && { mcp: flags.mcp }),
  };
}

/**
 * The host of a CLI run: the model, the root, the mode, a terminal prompt when interactive, and
 * the built-in tools plus `extraTools` (the run's MCP tools).
 */
export async function hostFor(
  settings: HostSettings,
  extraTools: readonly AnyTool[] = [],
): Promise<Result<Host>> {
  const model = await resolveModelSpec(settings.model);
  if (!model.ok) return model;
  const interactive = !settings.headless && Boolean(process.stdin.isTTY);
  return {
    ok: true,
    value: createHost({
      model: model.value,
      audit: new MemoryAuditLog(),
      root: settings.root,
      mode: settings.mode,
      interactors: interactive ? [terminalInteractor()] : [],
      tools: [...builtinTools(), ...extraTools],
    }),
  };
}
