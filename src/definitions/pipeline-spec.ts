import type { CodeStageFunction, GuardFunction, StageHooks, TransitionHook } from "./contract.js";
import type { Budget } from "./pipeline-types.js";
import type { InferSchema, SchemaSpec } from "./schema-spec.js";
import type { StageDefinition } from "./stage.js";
import type { AskFallback, GrantFallback } from "./wait-timeout.js";

/**
 * A pipeline as TypeScript writes it (`definePipeline`): the YAML format plus
 * code stages, inline stage definitions and sub-pipelines, named guards and stage hooks.
 * `Id` is the union of the stage ids and `G` of the guard names, so a typo in a target, a
 * `visits` or a `guard` is a type error; `S`, the stages as written, gives each stage's hooks
 * the type of its completion payload where its `completion` is a zod schema.
 */
export interface PipelineSpec<
  Id extends string = string,
  G extends string = string,
  S extends Record<Id, StageSpec> = Record<Id, StageSpec>,
> {
  id: string;
  description?: string;
  /**
   * The fields the pipeline writes into ctx, as JSON Schema or a zod schema (converted with zod's
   * `toJSONSchema`); templates may read only these.
   */
  context?: SchemaSpec;
  entry: NoInfer<Id>;
  stages: S & Record<Id, StageSpec>;
  next?: Partial<Record<NoInfer<Id>, TransitionSpec<NoInfer<Id>, NoInfer<G>>>>;
  /**
   * Tool rules the pipeline answers grant requests with; `timeout`: how long a request left to a
   * person waits (seconds, or a duration such as `"10m"`), and its fallback: `deny` the call or `fail` the stage.
   */
  grants?: { approve?: string[]; deny?: string[]; timeout?: TimeoutSpec<GrantFallback> };
  guards?: Record<G, GuardFunction>;
  hooks?: { [K in NoInfer<Id>]?: StageHooks<CompletionOf<S[K]>> };
  /** `adjacent`: OVERRIDE goes only to a stage a rule of the current stage leads to. */
  override?: "reachable" | "adjacent";
  /** `true`: `redo` of a run that ended `done` reopens it (done is final until redo). */
  reopenable?: boolean;
  /** What a run may spend, and each execution of the stages named (see `Budget`). */
  budget?: { run?: Budget; stages?: { [K in NoInfer<Id>]?: Budget } };
  /** Told after every transition of a run (see `TransitionHook`). */
  onTransition?: TransitionHook;
}

/** The type of a stage entry's completion payload, where its `completion` is a zod schema. */
export type CompletionOf<E> = E extends { completion: infer C } ? InferSchema<C> : never;

export type StageSpec =
  /**
   * A stage file, relative to `baseDir`; `output` lists the completion fields Exit hands on;
   * `completion` (JSON Schema or zod) stands in for the file's `completionSchema`.
   */
  | { file: string; output?: string[]; completion?: SchemaSpec }
  | { stage: StageDefinition; output?: string[]; completion?: SchemaSpec }
  /** A sub-pipeline: a spec, or a YAML file relative to `baseDir`. */
  | { pipeline: PipelineSpec | string }
  | { code: CodeStageFunction }
  | { run: string; timeoutMs?: number }
  /**
   * Asks a person for a value valid under `schema` (JSON Schema or zod); the value is the output.
   * `timeout`: nobody answering by then fails the stage, or gives `{ answer }`.
   */
  | { ask: { prompt: string; schema: SchemaSpec; timeout?: TimeoutSpec<AskFallback> } };

/** A wait's deadline: `after` seconds (or a duration such as `"10m"`, `"2h"`), and what nobody answering by then is taken as. */
export interface TimeoutSpec<Then> {
  after: number | string;
  fallback: Then;
}

export type EndTarget = "done" | "fail" | "cancel";

export type TransitionSpec<Id extends string = string, G extends string = string> =
  | Id
  | EndTarget
  | RuleSpec<Id, G>[]
  | ParallelSpec<Id>
  | MapSpec<Id>;

export interface RuleSpec<Id extends string = string, G extends string = string> {
  when?: ConditionSpec<Id, G>;
  to: Id | EndTarget;
}

export interface ParallelSpec<Id extends string = string> {
  parallel: Id[];
  join: Id | "done";
  policy?: "fail-fast" | "all-settled" | "any" | { quorum: number };
  maxConcurrency?: number;
}

/** A map group: `stage` run once per item of the list at `over` (`output.files`). */
export interface MapSpec<Id extends string = string> {
  map: { over: string; stage: Id; as?: string; maxItems?: number };
  join: Id | "done";
  policy?: "fail-fast" | "all-settled" | "any" | { quorum: number };
  maxConcurrency?: number;
}

export type ConditionSpec<Id extends string = string, G extends string = string> =
  | ({ path: string } & Comparison)
  | ({ visits: Id } & VisitComparison)
  | { all: ConditionSpec<Id, G>[] }
  | { any: ConditionSpec<Id, G>[] }
  | { not: ConditionSpec<Id, G> }
  | { guard: G };

type Comparison =
  | { equals: unknown }
  | { notEquals: unknown }
  | { lt: number | string }
  | { lte: number | string }
  | { gt: number | string }
  | { gte: number | string }
  | { in: unknown[] }
  | { exists: boolean };

type VisitComparison =
  | { equals: number }
  | { lt: number }
  | { lte: number }
  | { gt: number }
  | { gte: number };
