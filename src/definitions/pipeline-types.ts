import type { CodeStageFunction, GuardFunction, StageHooks, TransitionHook } from "./contract.js";
import type { JsonSchema } from "./json-schema.js";
import type { StageDefinition } from "./stage.js";
import type { AskTimeout, GrantTimeout } from "./wait-timeout.js";

/**
 * The intermediate representation of a pipeline: what both the YAML files and
 * `definePipeline` produce after validation, and what the compiler turns into an XState machine.
 * The topology is static: every possible successor of every stage is declared here.
 */
export interface PipelineDefinition {
  id: string;
  description?: string;
  /** JSON Schema of the fields the pipeline writes into ctx (`task` among them). */
  context: JsonSchema;
  entry: string;
  /** In declaration order. */
  stages: Record<string, PipelineStage>;
  /** A stage with no entry here ends the pipeline: `done` on ok or skip, `fail` on fail. */
  next: Record<string, Transition>;
  /**
   * The pipeline's own answer to grant requests (`Tool(pattern)` rules), and how long a request
   * left to a person waits for an answer (`timeout`).
   */
  grants: { approve: string[]; deny: string[]; timeout?: GrantTimeout };
  /** Named guard functions, used as `when: { guard: name }`. */
  guards: Record<string, GuardFunction>;
  /** Gate, assert and exit hooks of LLM stages, by stage id. */
  hooks: Record<string, StageHooks>;
  /**
   * Where `OVERRIDE` may move a run: `reachable` (the default), any stage the transitions reach
   * from the current one; `adjacent`, only a stage one of the current stage's rules leads to.
   */
  override?: OverrideReach;
  /**
   * Whether a run that ended `done` may be reopened by a redo (`reopenRun`); otherwise `done` is
   * final, like `failed` and `cancelled`.
   */
  reopenable?: boolean;
  /** What a run may spend, and each stage execution of the stages named. */
  budget?: PipelineBudget;
  /** Told after every transition of a run of this pipeline. */
  onTransition?: TransitionHook;
  /** The file it was loaded from, when it came from one. */
  file?: string;
  /**
   * The modules a YAML pipeline's code references name (`./checks.js`), each with the hash of its
   * text and of the relative modules it imports: part of the definition's fingerprint.
   */
  codeModules?: Record<string, string>;
}

export type OverrideReach = "reachable" | "adjacent";

/**
 * Limits on what model calls may spend: tokens as the provider reports them, cost in US
 * dollars at the model's price, and wall time since the run (or the stage execution) began. A
 * model call is not made once one is reached (`Cancellation/BudgetExceeded`).
 */
export interface Budget {
  maxInputTokens?: number;
  maxOutputTokens?: number;
  maxCostUsd?: number;
  maxSeconds?: number;
}

/** `run`: the whole run's, its parallel siblings and sub-pipelines sharing it; `stages`: each execution of a stage's. */
export interface PipelineBudget {
  run?: Budget;
  stages?: Record<string, Budget>;
}

export type PipelineStage =
  | {
      kind: "llm";
      id: string;
      definition: StageDefinition;
      /** The completion fields Exit hands on as output (YAML `output:`); all of parsed without. */
      outputFields?: string[];
    }
  | { kind: "pipeline"; id: string; pipeline: PipelineDefinition }
  /** YAML's built-in code stage: a command run through the host's Bash tool. */
  | { kind: "command"; id: string; command: string; timeoutMs: number }
  | { kind: "code"; id: string; run: CodeStageFunction }
  /**
   * Asks a person for a value valid under `schema`; the run suspends until it comes, or until its
   * `timeout` passes.
   */
  | { kind: "ask"; id: string; prompt: string; schema: JsonSchema; timeout?: AskTimeout };

/** A stage id of the same pipeline, or an end (`done`, `fail`, `cancel`). */
export type Target = string;
export const DONE = "done";
export const FAIL = "fail";
/** Ends the run as cancelled, as a `CANCEL` event does (a pi-workflows `cancel`, confirmed). */
export const CANCEL = "cancel";
/** The targets that end a pipeline rather than name a stage. */
export const ENDS: ReadonlySet<string> = new Set([DONE, FAIL, CANCEL]);

export type Transition =
  /** Ordered rules; the first whose condition holds wins. A plain successor is one rule without `when`. */
  | { kind: "rules"; rules: Rule[] }
  | {
      kind: "parallel";
      /** At least two, run concurrently, each with a frozen copy of ctx and empty upstream. */
      siblings: string[];
      /** Runs after the group with one upstream element per sibling, in declared order. */
      join: Target;
      policy: JoinPolicy;
      /** At most this many siblings run at once. */
      maxConcurrency?: number;
    }
  | MapGroup;

/**
 * A parallel group whose siblings are one stage (or sub-pipeline) run once per item of a list
 * the fan-out stage produced (or ctx holds): the siblings are decided as the group is entered.
 * Each sibling reads its item as `ctx.item`, `ctx.itemIndex` and `ctx.<as>`; the join receives
 * the results in list order. An empty list goes straight to the join.
 */
export interface MapGroup {
  kind: "map";
  /** A dotted path under `output`, `parsed` or `ctx` naming the list: `output.files`. */
  over: string;
  /** The stage run for each item. */
  stage: string;
  /** A further ctx name for the item, besides `item`. */
  as?: string;
  join: Target;
  policy: JoinPolicy;
  /** At most this many items run at once. */
  maxConcurrency?: number;
  /** A longer list is refused at run time (`Validation/MapTooManyItems`); 1,000 by default. */
  maxItems?: number;
}

/** The most items a map group takes when its `maxItems` is not set. */
export const DEFAULT_MAX_ITEMS = 1000;

export interface Rule {
  when?: Condition;
  to: Target;
}

export type JoinPolicy =
  | { kind: "fail-fast" }
  | { kind: "all-settled" }
  | { kind: "any" }
  | { kind: "quorum"; k: number };

export type CompareOp = "equals" | "notEquals" | "lt" | "lte" | "gt" | "gte" | "in" | "exists";

export type Condition =
  /** `path` is dotted over `{verdict, output, parsed, ctx}`, e.g. `output.approved`. */
  | { path: string; op: CompareOp; value?: unknown }
  | { visits: string; op: "equals" | "lt" | "lte" | "gt" | "gte"; value: number }
  | { all: Condition[] }
  | { any: Condition[] }
  | { not: Condition }
  | { guard: string };
