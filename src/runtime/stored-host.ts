import { existsSync } from "node:fs";
import { basename, resolve } from "node:path";
import type { Interactor } from "../compiler/interactor.js";
import { formatDiagnostic } from "../definitions/diagnostics.js";
import { isWorkflowDirectory, loadWorkflowPipeline } from "../definitions/pi-workflows/index.js";
import { BUILTIN_TOOL_NAMES, loadPipelineFile } from "../definitions/pipeline.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import { MemoryAuditLog } from "../events/audit.js";
import { loadPriceFile } from "../models/prices.js";
import { recordModel } from "../models/recorder.js";
import { MODEL_SPEC_FORMS, resolveModelSpec } from "../models/spec.js";
import type { ModelHandle } from "../models/types.js";
import { withoutUrlCredentials } from "../secrets/redact.js";
import type { SandboxMode } from "../tools/bash-sandbox.js";
import type { AnyTool, McpServers, McpSources } from "../tools/index.js";
import { builtinTools } from "../tools/index.js";
import { checkRoot, createHost, type Host, type UnansweredGrants } from "./host.js";
import type { PreparedRun } from "./run-control.js";
import type { SecurityMode } from "./security-mode.js";
import type { Tracing } from "./tracing/run-spans.js";

/*
 * The host a stored run's settings describe. A run started from the command line stores its
 * settings; `resume`, a worker that claims the run and the inspect server's answers all build
 * the same host from them here.
 */

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
  /** A price file laid over the bundled model prices (`--prices`, absolute); absent: none. */
  prices?: string;
  /** The run's MCP servers (`--mcp`, `--mcp-config`), started again by `resume`. */
  mcp?: McpSources;
  /** Bash's sandbox (`--sandbox`); absent in runs stored before it existed: `auto`. */
  sandbox?: SandboxMode;
  /** Sandboxed commands may use the network (`--allow-network`). */
  network?: true;
  /** Where bubblewrap cannot run, Bash runs unconfined rather than refused (`--unconfined-bash`). */
  unconfinedBash?: true;
}

/** The environment's opt-in to unconfined Bash, for every run and resume of this process. */
export const UNCONFINED_BASH_VARIABLE = "STAGECHART_UNCONFINED_BASH";

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
 * The host of a stored run: its model, root, mode and sandbox, the built-in tools plus
 * `extraTools` (the run's MCP tools), and `interactor` (a person at a terminal, say) — else the
 * model's own (a script's answers), else nobody.
 */
export async function storedRunHost(
  settings: HostSettings,
  {
    extraTools = [],
    interactor,
    tracing,
  }: { extraTools?: readonly AnyTool[]; interactor?: Interactor; tracing?: Tracing } = {},
): Promise<Result<Host>> {
  // Refused here too, before the command opens (or creates) a store.
  const root = checkRoot(settings.root);
  if (!root.ok) return root;
  const model = await modelFor(settings);
  if (!model.ok) return model;
  const prices = settings.prices === undefined ? ok({}) : loadPriceFile(settings.prices);
  if (!prices.ok) return prices;
  return {
    ok: true,
    value: createHost({
      model: settings.record ? recordModel(model.value, settings.record) : model.value,
      audit: new MemoryAuditLog(),
      root: settings.root,
      mode: settings.mode,
      interactors: interactor
        ? [interactor]
        : model.value.interactor
          ? [model.value.interactor]
          : [],
      unansweredGrants: settings.onGrant,
      prices: prices.value,
      ...(tracing && { tracing }),
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

const NO_SERVERS: McpServers = { tools: [], warnings: [], close: async () => undefined };

/** The run's MCP servers, started before anything needs the host's tool names; `warn` is told of tools left out. */
export async function attachRunMcp(
  sources: McpSources | undefined,
  warn: (warning: string) => void,
): Promise<Result<McpServers>> {
  if (!sources) return ok(NO_SERVERS);
  // Loaded only with servers to attach: a run without them needs none of the MCP client's code.
  const { attachMcpServers, resolveMcpServers } = await import("../tools/index.js");
  const configs = await resolveMcpServers(sources);
  if (!configs.ok) return configs;
  const servers = await attachMcpServers(configs.value);
  if (!servers.ok) return servers;
  for (const warning of servers.value.warnings) warn(warning);
  return servers;
}

/**
 * A stored run made ready to go on in this process from the settings stored with it: its MCP
 * servers started, its pipeline loaded (a file or a pi-workflows folder) against their tools,
 * and its host — never interactive (`headless`), since nobody is at this process's terminal for
 * it. `close` stops the servers. What `RunControl` resumes a run with for the inspect page.
 */
export async function prepareStoredRun(
  run: { runId: string; options: Record<string, unknown> },
  warn: (warning: string) => void = () => {},
): Promise<Result<PreparedRun>> {
  const settings = { ...(run.options as unknown as HostSettings), headless: true };
  if (typeof settings.pipelineFile !== "string")
    return err(
      new StagechartError(
        "Validation/PipelineNotFound",
        `run ${run.runId} stores no pipeline file to resume it from (a library or embedded run): resume it from the app that started it`,
        { runId: run.runId },
      ),
    );
  const mcp = await attachRunMcp(settings.mcp, warn);
  if (!mcp.ok) return mcp;
  const close = () => mcp.value.close();
  const toolNames = [...BUILTIN_TOOL_NAMES, ...mcp.value.tools.map((tool) => tool.name)];
  const file = settings.pipelineFile;
  const loaded = !existsSync(file)
    ? undefined
    : isWorkflowDirectory(file)
      ? await loadWorkflowPipeline(file, toolNames, { for: "run" })
      : await loadPipelineFile(file, { toolNames });
  if (!loaded?.ok) {
    await close();
    const problems = loaded ? loaded.diagnostics.map(formatDiagnostic).join("; ") : "it is gone";
    return err(
      new StagechartError(
        "Validation/PipelineInvalid",
        `run ${run.runId}'s pipeline ${file} cannot be loaded: ${problems}`,
        { runId: run.runId, pipelineFile: file },
      ),
    );
  }
  const host = await storedRunHost(settings, { extraTools: mcp.value.tools });
  if (!host.ok) {
    await close();
    return host;
  }
  return ok({ pipeline: loaded.value, host: host.value, close });
}
