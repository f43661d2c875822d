import { resolve } from "node:path";
import type { Result } from "../errors.js";
import { MemoryAuditLog } from "../inspect/audit.js";
import { recordModel } from "../models/recorder.js";
import { resolveModelSpec } from "../models/spec.js";
import { createHost, type Host, type UnansweredGrants } from "../runtime/host.js";
import { type Interactor, terminalInteractor } from "../runtime/interactors.js";
import type { SecurityMode } from "../runtime/security-mode.js";
import { type AnyTool, builtinTools, type McpSources } from "../tools/index.js";
import type { PromptWatcher } from "./live-progress.js";

/** What a run needs to be run again by `resume`: stored with the run. */
export interface HostSettings {
  pipelineFile: string;
  /**
   * `scripted:<absolute file>`, `replay:<absolute file>` or a hosted model spec — never a key:
   * keys are read from the environment again when the run resumes.
   */
  model: string;
  /** The cassette every model exchange is written to (absolute); a resume keeps recording. */
  record?: string;
  root: string;
  mode: SecurityMode;
  headless: boolean;
  /** What a grant request nobody can answer does: denied, or the run suspends until `resume`. */
  onGrant: UnansweredGrants;
  /** The run's MCP servers (`--mcp`, `--mcp-config`), started again by `resume`. */
  mcp?: McpSources;
}

export function settingsFor(flags: {
  pipelineFile: string;
  model?: string;
  record?: string;
  root?: string;
  mode: SecurityMode;
  headless?: boolean;
  onGrant?: UnansweredGrants;
  mcp?: McpSources | undefined;
}): HostSettings {
  const model = flags.model ?? `scripted:${flags.pipelineFile.replace(/\.ya?ml$/, ".script.yaml")}`;
  const [kind, ...rest] = model.split(":");
  const target = rest.join(":");
  return {
    pipelineFile: resolve(flags.pipelineFile),
    model: FILE_MODELS.has(kind ?? "") && target ? `${kind}:${resolve(target)}` : model,
    ...(flags.record !== undefined && { record: resolve(flags.record) }),
    root: resolve(flags.root ?? process.cwd()),
    mode: flags.mode,
    headless: Boolean(flags.headless),
    onGrant: flags.onGrant ?? "deny",
    ...(flags.mcp && { mcp: flags.mcp }),
  };
}

/** Model kinds whose target is a file, stored absolute so `resume` finds it from anywhere. */
const FILE_MODELS = new Set(["scripted", "replay"]);

/**
 * The host of a CLI run: the model, the root, the mode, a terminal prompt when interactive, and
 * the built-in tools plus `extraTools` (the run's MCP tools). `prompts` is told when the terminal
 * prompt opens and closes, so the live progress stays off the prompt's line.
 */
export async function hostFor(
  settings: HostSettings,
  extraTools: readonly AnyTool[] = [],
  prompts?: PromptWatcher,
): Promise<Result<Host>> {
  const model = await resolveModelSpec(settings.model);
  if (!model.ok) return model;
  const interactive = !settings.headless && Boolean(process.stdin.isTTY);
  return {
    ok: true,
    value: createHost({
      model: settings.record ? recordModel(model.value, settings.record) : model.value,
      audit: new MemoryAuditLog(),
      root: settings.root,
      mode: settings.mode,
      interactors: interactive ? [watched(terminalInteractor(), prompts)] : [],
      unansweredGrants: settings.onGrant ?? "deny",
      tools: [...builtinTools(), ...extraTools],
    }),
  };
}

/** An interactor that tells `watcher` while it has a question open. */
export function watched(interactor: Interactor, watcher: PromptWatcher | undefined): Interactor {
  if (!watcher) return interactor;
  return {
    name: interactor.name,
    async requestGrant(request, signal) {
      watcher.promptOpened();
      try {
        return await interactor.requestGrant(request, signal);
      } finally {
        watcher.promptClosed();
      }
    },
  };
}
