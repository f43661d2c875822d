import { existsSync } from "node:fs";
import { basename, resolve } from "node:path";
import { type Command, Option } from "commander";
import { err, type Result, StagechartError } from "../errors.js";
import { MemoryAuditLog } from "../inspect/audit.js";
import { recordModel } from "../models/recorder.js";
import { withoutUrlCredentials } from "../models/redact.js";
import { MODEL_SPEC_FORMS, resolveModelSpec } from "../models/spec.js";
import type { ModelHandle } from "../models/types.js";
import {
  checkRoot,
  createHost,
  type Host,
  sandboxNotice,
  type UnansweredGrants,
} from "../runtime/host.js";
import { type Interactor, terminalInteractor } from "../runtime/interactors.js";
import type { SecurityMode } from "../runtime/security-mode.js";
import { refusalMessage, SANDBOX_MODES, type SandboxMode } from "../tools/bash-sandbox.js";
import { type AnyTool, builtinTools, type McpSources } from "../tools/index.js";
import type { Terminal } from "./io.js";
import type { PromptWatcher } from "./live-progress.js";

/** What a run needs to be run again by `resume`: stored with the run. */
export interface HostSettings {
  pipelineFile: string;
  /**
   * `scripted:<absolute file>`, `replay:<absolute file>` or a hosted model spec — never a key:
   * the credentials of a base URL in it are removed, and keys are read from the environment
   * again when the run resumes.
   */
  model: string;
  /** The spec's base URL carried the key: a resume needs it from the provider's key variable. */
  modelKeyRequired?: true;
  /** No `--model` was given: the model is the script beside the pipeline, which must exist. */
  defaultModel?: true;
  /** The cassette every model exchange is written to (absolute); a resume keeps recording. */
  record?: string;
  root: string;
  mode: SecurityMode;
  headless: boolean;
  /** What a grant request nobody can answer does: denied, or the run suspends until `resume`. */
  onGrant: UnansweredGrants;
  /** The session's parallel stage cap (`--max-parallel`); absent: none. */
  maxParallel?: number;
  /** The run's MCP servers (`--mcp`, `--mcp-config`), started again by `resume`. */
  mcp?: McpSources;
  /** Bash's sandbox (`--sandbox`); absent in runs stored before it existed: `auto`. */
  sandbox?: SandboxMode;
  /** Sandboxed commands may use the network (`--allow-network`). */
  network?: true;
  /** Where bubblewrap cannot run, Bash runs unconfined rather than refused (`--unconfined-bash`). */
  unconfinedBash?: true;
}

export interface SandboxFlags {
  sandbox?: SandboxMode;
  allowNetwork?: boolean;
  unconfinedBash?: boolean;
}

/** The environment's opt-in to unconfined Bash, for every run and resume of this process. */
const UNCONFINED_BASH_VARIABLE = "STAGECHART_UNCONFINED_BASH";

/** `--sandbox`, `--allow-network` and `--unconfined-bash`, the flags that say how Bash is confined. */
export function addSandboxOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        "--sandbox <mode>",
        "run Bash inside bubblewrap: required (refuse Bash without it), auto (the same, unless --unconfined-bash), off",
      )
        .choices(SANDBOX_MODES)
        .default("auto"),
    )
    .option("--allow-network", "let sandboxed commands use the network (default: none)")
    .option(
      "--unconfined-bash",
      `where bubblewrap cannot run, run Bash unconfined (it can read and write anything you can) instead of refusing it; also ${UNCONFINED_BASH_VARIABLE}=1`,
    );
}

export function settingsFor(
  flags: {
    pipelineFile: string;
    model?: string;
    record?: string;
    root?: string;
    mode: SecurityMode;
    headless?: boolean;
    onGrant?: UnansweredGrants;
    mcp?: McpSources | undefined;
    maxParallel?: number;
  } & SandboxFlags,
): HostSettings {
  return withModel(
    {
      pipelineFile: resolve(flags.pipelineFile),
      ...(flags.record !== undefined && { record: resolve(flags.record) }),
      root: resolve(flags.root ?? process.cwd()),
      mode: flags.mode,
      headless: Boolean(flags.headless),
      onGrant: flags.onGrant ?? "deny",
      ...(flags.maxParallel !== undefined && { maxParallel: flags.maxParallel }),
      ...(flags.mcp && { mcp: flags.mcp }),
      sandbox: flags.sandbox ?? "auto",
      ...(flags.allowNetwork && { network: true }),
      ...(flags.unconfinedBash && { unconfinedBash: true }),
    },
    flags.model,
  );
}

/**
 * `settings` run on `model` (by default the script beside the pipeline), whatever model they had:
 * a file model's path made absolute, a base URL's credentials kept out of what is stored.
 */
export function withModel(
  settings: Omit<HostSettings, "model"> & { model?: string },
  model: string | undefined,
): HostSettings {
  const { model: _model, modelKeyRequired: _key, defaultModel: _default, ...rest } = settings;
  const spec = model ?? `scripted:${scriptBeside(rest.pipelineFile)}`;
  const [kind, ...target] = spec.split(":");
  const file = target.join(":");
  const stored = withoutUrlCredentials(spec);
  const withSpec: HostSettings = {
    ...rest,
    model: FILE_MODELS.has(kind ?? "") && file ? `${kind}:${resolve(file)}` : stored,
    ...(stored !== spec && { modelKeyRequired: true }),
    ...(model === undefined && { defaultModel: true }),
  };
  if (stored !== spec) specsWithKeys.set(withSpec, spec);
  return withSpec;
}

/**
 * The spec as `run` was given it, when its base URL carried a key, beside the settings it made:
 * the host of that run uses it, and nothing that stores, copies or prints settings can see it.
 */
const specsWithKeys = new WeakMap<HostSettings, string>();

/**
 * The pipeline's own scripted model: `<name>.script.yaml` beside `<name>.yaml` (or a workflow
 * directory `<name>`).
 */
const scriptBeside = (pipelineFile: string): string =>
  pipelineFile.replace(/(\.ya?ml)?$/, ".script.yaml");

/** Model kinds whose target is a file, stored absolute so `resume` finds it from anywhere. */
const FILE_MODELS = new Set(["scripted", "replay"]);

/**
 * The host of a CLI run: the model, the root, the mode, a prompt on `terminal` unless headless
 * (no terminal: nobody is asked), and the built-in tools plus `extraTools` (the run's MCP tools).
 * `prompts` is told when the terminal prompt opens and closes, so the live progress stays off the
 * prompt's line.
 */
export async function hostFor(
  settings: HostSettings,
  extraTools: readonly AnyTool[] = [],
  prompts?: PromptWatcher,
  terminal?: Terminal,
): Promise<Result<Host>> {
  // Refused here too, before the command opens (or creates) a store.
  const root = checkRoot(settings.root);
  if (!root.ok) return root;
  const model = await modelFor(settings);
  if (!model.ok) return model;
  const prompted = settings.headless ? undefined : terminal;
  return {
    ok: true,
    value: createHost({
      model: settings.record ? recordModel(model.value, settings.record) : model.value,
      audit: new MemoryAuditLog(),
      root: settings.root,
      mode: settings.mode,
      interactors: prompted
        ? [watched(terminalInteractor(prompted), prompts)]
        : model.value.interactor
          ? [model.value.interactor]
          : [],
      unansweredGrants: settings.onGrant,
      ...(settings.maxParallel !== undefined && {
        limits: { maxParallelStages: settings.maxParallel },
      }),
      tools: [...builtinTools(), ...extraTools],
      sandbox: {
        mode: settings.sandbox ?? "auto",
        network: settings.network === true,
        allowUnconfined:
          settings.unconfinedBash === true || process.env[UNCONFINED_BASH_VARIABLE] === "1",
      },
    }),
  };
}

/** The warning line for a run whose Bash will not be sandboxed, or undefined. */
export function sandboxWarning(host: Host): string | undefined {
  const { sandbox } = host;
  if (sandbox.sandboxed || sandboxNotice(host) === undefined) return undefined;
  if (sandbox.bash === "refused") return `stagechart: warning: ${refusalMessage(sandbox)}`;
  const what = "Bash runs unconfined: commands can read and write anything this user can";
  return `stagechart: warning: ${what}; ${sandbox.reason}`;
}

/** The run's model; without `--model`, the pipeline's script, which must be there. */
async function modelFor(settings: HostSettings): Promise<Result<ModelHandle>> {
  const script = scriptBeside(settings.pipelineFile);
  if (settings.defaultModel && !existsSync(script)) {
    return err(
      new StagechartError(
        "Validation/ModelSpecMissing",
        `no --model was given, and there is no ${basename(script)} beside the pipeline ${settings.pipelineFile} to run it on; pick a model with --model: ${MODEL_SPEC_FORMS}`,
        { pipelineFile: settings.pipelineFile, script },
      ),
    );
  }
  const spec = specsWithKeys.get(settings) ?? settings.model;
  return resolveModelSpec(spec, process.env, { keyRequired: Boolean(settings.modelKeyRequired) });
}

/** An interactor that tells `watcher` while it has a question open. */
export function watched(interactor: Interactor, watcher: PromptWatcher | undefined): Interactor {
  if (!watcher) return interactor;
  const watching = async <T>(ask: () => Promise<T>): Promise<T> => {
    watcher.promptOpened();
    try {
      return await ask();
    } finally {
      watcher.promptClosed();
    }
  };
  const { requestGrant, askValue } = interactor;
  return {
    name: interactor.name,
    ...(requestGrant && {
      requestGrant: (request, signal) =>
        watching(() => requestGrant.call(interactor, request, signal)),
    }),
    ...(askValue && {
      askValue: (request, signal) => watching(() => askValue.call(interactor, request, signal)),
    }),
  };
}
