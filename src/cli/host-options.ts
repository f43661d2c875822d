import { resolve } from "node:path";
import { type Command, Option } from "commander";
import type { Interactor } from "../compiler/interactor.js";
import type { Result } from "../errors.js";
import { type Host, sandboxNotice, type UnansweredGrants } from "../runtime/host.js";
import { terminalInteractor } from "../runtime/interactors.js";
import type { SecurityMode } from "../runtime/security-mode.js";
import {
  type HostSettings,
  storedRunHost,
  UNCONFINED_BASH_VARIABLE,
  withModel,
} from "../runtime/stored-host.js";
import type { Tracing } from "../runtime/tracing/run-spans.js";
import { refusalMessage, SANDBOX_MODES, type SandboxMode } from "../tools/bash-sandbox.js";
import type { AnyTool, McpSources } from "../tools/index.js";
import type { Terminal } from "./io.js";
import type { PromptWatcher } from "./live-progress.js";

export interface SandboxFlags {
  sandbox?: SandboxMode;
  allowNetwork?: boolean;
  unconfinedBash?: boolean;
}

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
    prices?: string;
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
      ...(flags.prices !== undefined && { prices: resolve(flags.prices) }),
      ...(flags.mcp && { mcp: flags.mcp }),
      sandbox: flags.sandbox ?? "auto",
      ...(flags.allowNetwork && { network: true }),
      ...(flags.unconfinedBash && { unconfinedBash: true }),
    },
    flags.model,
  );
}

/**
 * The host of a CLI run: `storedRunHost` with a prompt on `terminal` unless headless (no
 * terminal: nobody is asked). `prompts` is told when the terminal prompt opens and closes, so the
 * live progress stays off the prompt's line.
 */
export function hostFor(
  settings: HostSettings,
  {
    extraTools = [],
    prompts,
    tracing,
  }: { extraTools?: readonly AnyTool[]; prompts?: PromptWatcher; tracing?: Tracing | undefined },
  terminal?: Terminal,
): Promise<Result<Host>> {
  const prompted = settings.headless ? undefined : terminal;
  return storedRunHost(settings, {
    extraTools,
    ...(prompted && { interactor: watched(terminalInteractor(prompted), prompts) }),
    ...(tracing && { tracing }),
  });
}

/** The warning line for a run whose Bash will not be sandboxed, or undefined. */
export function sandboxWarning(host: Host): string | undefined {
  const { sandbox } = host;
  if (sandbox.sandboxed || sandboxNotice(host) === undefined) return undefined;
  if (sandbox.bash === "refused") return `stagechart: warning: ${refusalMessage(sandbox)}`;
  const what = "Bash runs unconfined: commands can read and write anything this user can";
  return `stagechart: warning: ${what}; ${sandbox.reason}`;
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
