import { realpathSync, statSync } from "node:fs";
import { resolve } from "node:path";
import type { Interactor } from "../compiler/interactor.js";
import type { StageSlots } from "../compiler/stage-slots.js";
import type { GrantRequest, PolicyDecision } from "../compiler/stage-types.js";
import type { StageHooks } from "../definitions/contract.js";
import type { PipelineMemory } from "../definitions/memory.js";
import type { GrantTimeout } from "../definitions/wait-timeout.js";
import { err, ok, type Result, StagechartError } from "../errors.js";
import type { AuditSink } from "../events/audit.js";
import type { ModelDelta } from "../events/run-events.js";
import { type ModelPricing, type PriceTable, pricingOf } from "../models/prices.js";
import type { ModelHandle } from "../models/types.js";
import {
  environmentKeysRedactor,
  type ModelEnv,
  withoutProviderKeys,
} from "../secrets/key-variables.js";
import { type Redactor, redactorOf } from "../secrets/redact.js";
import {
  type BashConfinement,
  bashConfinement,
  DEFAULT_SANDBOX,
  type SandboxSettings,
} from "../tools/bash-sandbox.js";
import { builtinTools } from "../tools/index.js";
import { type AnyTool, DEFAULT_TOOL_LIMITS, type ToolLimits } from "../tools/types.js";
import type { BudgetWatch } from "./budget.js";
import { type Journal, MemoryJournal } from "./journal.js";
import { lazyRecord } from "./lazy-record.js";
import { HostMemory } from "./memory.js";
import type { StepStore } from "./persistence.js";
import { deferEverything, parseToolRule, type ToolRule } from "./rules.js";
import type { SecurityMode } from "./security-mode.js";
import { stageSlotsFor } from "./stage-slots.js";
import type { RunStore } from "./store-port.js";
import type { Tracing, TurnContent, TurnKey } from "./tracing/run-spans.js";
import { MemoryTranscripts, type TranscriptStore } from "./transcripts.js";

/**
 * What the seeds call the orchestrator session: the live tool set, the model, the security
 * mode, the interactors, guard rules, limits, clock and stores that every stage inherits.
 * A stage can only narrow it. Passed to the machines as implementations, never as a global.
 */
/** Where the pieces of a run's streaming replies go. */
export interface ModelDeltaSink {
  /** Whether anybody reads pieces now: asked at each model call's start. */
  wanted(): boolean;
  tell(delta: ModelDelta): void;
}

export interface Host {
  /** Tools work inside this directory (realpath'd); a run refuses one that is not a directory. */
  root: string;
  model: ModelHandle;
  tools: ReadonlyMap<string, AnyTool>;
  interactors: readonly Interactor[];
  /** What a headless run does with a grant request: deny it, or suspend and wait. */
  unansweredGrants: UnansweredGrants;
  mode: SecurityMode;
  allowlist: readonly ToolRule[];
  /** Deny rules run on every approved call, e.g. `Write(.env)`, `Bash(rm -rf *)`. */
  guards: readonly ToolRule[];
  /** The pipeline's own answer to grant requests, asked before any interactor. */
  grantPolicy: (request: GrantRequest) => PolicyDecision;
  /** How long a grant request left to a person waits, and what then: the run pipeline's grants block. */
  grantTimeout?: GrantTimeout;
  hooks: Readonly<Record<string, StageHooks>>;
  limits: HostLimits;
  /** The session's parallel stage cap (`limits.maxParallelStages`); none when unlimited. */
  stageSlots?: StageSlots;
  /** How Bash runs: inside bubblewrap, or not and why (settled when the host is created). */
  sandbox: BashConfinement;
  /**
   * Removes every key the host knows from a text: the model's, and the value of each provider
   * key variable in its environment. Applied to model replies and tool results before they are
   * journaled, audited or recorded.
   */
  redact: Redactor;
  /**
   * The environment commands run with: the host's, without the keys `redact` removes. Built when
   * a command first reads it (listing `process.env` costs more than the rest of a host).
   */
  commandEnv: Readonly<Record<string, string>>;
  clock: { now(): number };
  /** The model's name and price, which each model turn's cost is reckoned at. */
  pricing: ModelPricing;
  /** A run's spending against its pipeline's budget, when the pipeline sets one (per run). */
  budget?: BudgetWatch;
  audit: AuditSink;
  /**
   * Told each piece of a model reply as it streams (set per run, for `run.events()`), when
   * somebody reads them: a call that starts with `wanted()` false builds no pieces.
   */
  modelDeltas?: ModelDeltaSink;
  /** Where a run's spans go (OpenTelemetry), when tracing is on: `createTracing`. */
  tracing?: Tracing;
  /** Tells a model call's span what was said, when spans carry content (set per run). */
  traceContent?: (key: TurnKey, said: TurnContent) => void;
  transcripts: TranscriptStore;
  journal: Journal;
  /** What code stages keep between runs: a durable run's is its store's. */
  memory: PipelineMemory;
  /**
   * Makes every run of a pipeline compiled for this host durable, wherever it runs: `startRun`
   * and `resumeRun` use it unless given another, and a pipeline another app's machine invokes
   * keeps its run row, audit log, journal and transcripts in it (see embedded.ts). A store that
   * answers at once (SQLite): an invoked pipeline writes its steps as its machines take them.
   */
  store?: HostStore;
}

/** A store that is both the port and its own step store, answering at once (SQLite's). */
export type HostStore = RunStore & StepStore;

export type UnansweredGrants = "deny" | "suspend";

export interface HostLimits {
  tool: ToolLimits;
  /** Provider errors in a row a stage retries before it fails. */
  providerRetries: number;
  /** The first wait after a provider error; it doubles after each further one. */
  providerRetryDelayMs: number;
  /** A model call still unanswered after this long fails as `ProviderTransient/ModelTimeout`. */
  modelCallTimeoutMs: number;
  /**
   * A hosted model's call whose server, having begun its reply (sent its headers), sends nothing
   * more of it for this long fails as `ProviderTransient/IdleTimeout`.
   */
  modelIdleTimeoutMs: number;
  /**
   * The session's parallel stage cap: at most this many LLM, code and command stages work at
   * once in the host's runs, across parallel groups and sub-pipelines (`Infinity`: no cap).
   */
  maxParallelStages: number;
}

export interface HostOptions {
  model: ModelHandle;
  audit: AuditSink;
  root?: string;
  /** Replaces the built-in tools. */
  tools?: readonly AnyTool[];
  interactors?: readonly Interactor[];
  unansweredGrants?: UnansweredGrants;
  mode?: SecurityMode;
  allowlist?: readonly string[];
  guards?: readonly string[];
  grantPolicy?: (request: GrantRequest) => PolicyDecision;
  hooks?: Readonly<Record<string, StageHooks>>;
  limits?: Partial<Omit<HostLimits, "tool">> & { tool?: Partial<ToolLimits> };
  /**
   * Bash's sandbox: mode `auto`, no network, `bwrap` on PATH unless given. Where bubblewrap
   * cannot run, Bash is refused unless `allowUnconfined` is set (then it runs unconfined, and the
   * run's audit log says so).
   */
  sandbox?: Partial<SandboxSettings>;
  /** Where provider keys are found, and what commands inherit without them: process.env by default. */
  env?: ModelEnv;
  clock?: { now(): number };
  /**
   * Model prices in US dollars per million tokens, laid over the bundled ones: a model turn's
   * cost is reckoned at its model's price (`loadPriceFile` reads a price file).
   */
  prices?: PriceTable;
  /**
   * OpenTelemetry spans of every run of the host (`createTracing`, `tracingFromEnv`,
   * `tracingWith`); none by default.
   */
  tracing?: Tracing;
  transcripts?: TranscriptStore;
  journal?: Journal;
  memory?: PipelineMemory;
  /** Where runs are kept; also the journal and transcripts unless those are given. */
  store?: HostStore;
}

export function createHost(options: HostOptions): Host {
  const tools = options.tools ?? builtinTools();
  const root = options.root ?? process.cwd();
  const checked = checkRoot(root);
  const env = options.env ?? process.env;
  const redact = bothRedactors(redactorOf(options.model), environmentKeysRedactor(env));
  const maxParallelStages = options.limits?.maxParallelStages ?? Number.POSITIVE_INFINITY;
  const stageSlots = stageSlotsFor(maxParallelStages);
  return {
    // A bad root is kept as given: startRun and resumeRun refuse it (Validation/RootInvalid).
    root: checked.ok ? checked.value : resolve(root),
    model: options.model,
    tools: new Map(tools.map((tool) => [tool.name, tool])),
    interactors: options.interactors ?? [],
    unansweredGrants: options.unansweredGrants ?? "deny",
    mode: options.mode ?? "ask",
    allowlist: (options.allowlist ?? []).map(parseToolRule),
    guards: (options.guards ?? []).map(parseToolRule),
    grantPolicy: options.grantPolicy ?? deferEverything,
    hooks: options.hooks ?? {},
    limits: {
      tool: { ...DEFAULT_TOOL_LIMITS, ...options.limits?.tool },
      providerRetries: options.limits?.providerRetries ?? 3,
      providerRetryDelayMs: options.limits?.providerRetryDelayMs ?? 1000,
      modelCallTimeoutMs: options.limits?.modelCallTimeoutMs ?? 300_000,
      modelIdleTimeoutMs: options.limits?.modelIdleTimeoutMs ?? 60_000,
      maxParallelStages,
    },
    ...(stageSlots && { stageSlots }),
    sandbox: bashConfinement({ ...DEFAULT_SANDBOX, ...options.sandbox }),
    redact,
    // Read when a command first needs it: keys set since the host was made are scrubbed too.
    commandEnv: lazyRecord(() =>
      withoutProviderKeys(env, bothRedactors(redact, environmentKeysRedactor(env))),
    ),
    clock: options.clock ?? { now: Date.now },
    pricing: pricingOf(options.model.model, options.prices),
    audit: options.audit,
    ...(options.tracing && { tracing: options.tracing }),
    transcripts: options.transcripts ?? options.store ?? hostMade(new MemoryTranscripts()),
    journal: options.journal ?? options.store ?? hostMade(new MemoryJournal()),
    memory: options.memory ?? options.store ?? new HostMemory(options.clock),
    ...(options.store && { store: options.store }),
  };
}

/** The journals and transcript stores `createHost` made itself, as it was given none (nor a store). */
const hostMadeStores = new WeakSet<object>();

function hostMade<T extends object>(made: T): T {
  hostMadeStores.add(made);
  return made;
}

/**
 * The host an in-memory run is launched with: where the host's journal and transcripts are the
 * ones it made itself, the run gets its own (its handle reads its transcripts: `transcript()`).
 * Kept in the host's, every reply, tool result and transcript of every run stayed for the life of
 * the host, and a later run of the same id found the earlier one's: its replies in the journal
 * (replayed, not asked for), its entries in the transcripts. A run that is not stored never
 * resumes, so nothing else reads them. What the host was given is the caller's to keep.
 */
export function inMemoryRunHost(host: Host): Host {
  const journal = hostMadeStores.has(host.journal) ? new MemoryJournal() : host.journal;
  const transcripts = hostMadeStores.has(host.transcripts)
    ? new MemoryTranscripts()
    : host.transcripts;
  return journal === host.journal && transcripts === host.transcripts
    ? host
    : { ...host, journal, transcripts };
}

/**
 * Milliseconds since `started` by the host's clock. A whole number of them is returned as a
 * small integer: in V8 the difference of two `Date.now()` values is a double, which each object
 * keeping it (a journal entry, audit payloads) would hold in a box of its own.
 */
export function elapsedMs(host: Pick<Host, "clock">, started: number): number {
  const ms = host.clock.now() - started;
  return ms === (ms | 0) ? ms | 0 : ms;
}

const bothRedactors =
  (first: Redactor, second: Redactor): Redactor =>
  (text) =>
    second(first(text));

/**
 * The directory tools work in, realpath'd — or `Validation/RootInvalid` naming it when it does
 * not exist, is not a directory, or cannot be reached.
 */
export function checkRoot(root: string): Result<string> {
  const invalid = (problem: string) =>
    err(
      new StagechartError(
        "Validation/RootInvalid",
        `the root ${root} ${problem}; tools work inside the root, which must be an existing directory`,
        { root },
      ),
    );
  try {
    const real = realpathSync(root);
    return statSync(real).isDirectory() ? ok(real) : invalid("is not a directory");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return invalid("does not exist");
    return invalid(code === "ENOTDIR" ? "is not a directory" : `cannot be used (${code})`);
  }
}

/**
 * What a run says at its start when its Bash will not be sandboxed: the mode, why, and whether
 * Bash runs unconfined or is refused; `allowUnconfined` when it runs unconfined because the host
 * chose to let it where the sandbox cannot be used. Nothing when the host has no Bash or Bash is
 * sandboxed.
 */
export function sandboxNotice(host: Host): Record<string, unknown> | undefined {
  const { sandbox } = host;
  if (sandbox.sandboxed || !host.tools.has("Bash")) return undefined;
  const { mode, reason, bash } = sandbox;
  const allowed = bash === "unconfined" && mode !== "off";
  return { mode, reason, bash, ...(allowed && { allowUnconfined: true }) };
}
