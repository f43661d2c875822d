/*
 * What the pipeline machine is made of, apart from its states: its services, input, context,
 * events and output. The files that build its states all use these types, so they live here,
 * below each of them, and no file of the compiler imports one above it.
 */
import type { AnyStateMachine } from "xstate";
import type { OverrideNote, StageResult } from "../definitions/contract.js";
import type { PipelineStage } from "../definitions/pipeline-types.js";
import type { ErrorView } from "../errors.js";
import type { AuditEventInput } from "../events/audit.js";
import type { StageSlots } from "./stage-slots.js";
import type { StageTable } from "./stage-table.js";

/** What the pipeline machine asks of the world besides its stages' lifecycle machine. */
export interface PipelineServices {
  /** The stage lifecycle machine, bound to a host. */
  stageMachine: AnyStateMachine;
  /** The machine of `ask` stages, bound to a host. */
  askMachine: AnyStateMachine;
  /** Runs a code stage or a command stage to its StageResult. */
  runCode(
    stage: Extract<PipelineStage, { kind: "code" | "command" }>,
    input: CodeStageInput,
    signal: AbortSignal,
  ): Promise<StageResult>;
  audit(event: AuditEventInput): void;
  /** The session's parallel stage cap: a code or command stage holds a slot while it runs. */
  slots?: StageSlots;
  /**
   * Set when the machine is a run of its own, invoked by another app's machine: told as the run
   * begins (not when it is restored; a throw refuses its input) and as it ends.
   */
  run?: { begins(context: PipelineContext): void; ends(context: PipelineContext): void };
  /** Why a control event that no transition took is refused. */
  refusal?(context: PipelineContext, event: PipelineEvent): ErrorView | undefined;
}

/** Emitted (XState `emit`) when the run refuses a control event sent to it. */
export interface ControlRefused {
  type: "stagechart.controlRefused";
  control: PipelineEvent;
  error: ErrorView;
}

export interface CodeStageInput {
  runId: string;
  stageId: string;
  stageExecutionId: string;
  ctx: Readonly<Record<string, unknown>>;
  upstream: readonly StageResult[];
  /** Stage executions the run entered before this one (`ctx.stagesBefore`). */
  stagesBefore?: number;
  /** Set when an override entered this stage execution: `ctx.override`. */
  override?: OverrideNote;
}

export interface PipelineInput {
  runId: string;
  ctx: Readonly<Record<string, unknown>>;
  /** What the entry stage receives: the upstream of the stage this pipeline runs as (none at the root). */
  upstream?: readonly StageResult[];
  /** Set when the pipeline runs as a stage of another: the id and execution of that stage. */
  asStage?: { stageId: string; stageExecutionId: string };
  /** Stage executions the run entered before this (sub-)pipeline started. */
  enteredBefore?: number;
  /** Set when an override entered the pipeline's stage: its entry stage is told why. */
  override?: OverrideNote;
  /** What a reopened run's stages did before it ended done, carried on (see `reopenRun`). */
  carried?: CarriedContext;
}

export type CarriedContext = Pick<
  PipelineContext,
  | "visits"
  | "modelCalls"
  | "results"
  | "lastEnded"
  | "upstream"
  | "upstreamOf"
  | "groups"
  | "entered"
>;

export type RunStatus = "done" | "failed" | "cancelled";

export interface PipelineOutput {
  status: RunStatus;
  /** The pipeline as one StageResult, for a parent pipeline. */
  result: StageResult;
  /** The latest result of every stage that ran. */
  results: Record<string, StageResult>;
  /** A sub-pipeline's: the stage executions it entered, its own sub-pipelines' included. */
  entered?: number;
  error?: ErrorView;
}

export type PipelineEvent =
  | { type: "OVERRIDE"; to: string; reason: string }
  | { type: "REDO"; stage: string }
  | { type: "CANCEL"; reason?: string };

export type SiblingState = "queued" | "running" | "settled";

/**
 * A parallel group's counts, kept as its siblings settle, so deciding the group reads no sibling:
 * `started` siblings (in declaration order) left the queue, `running` of them run now.
 */
export interface GroupTally {
  siblings: number;
  started: number;
  running: number;
  ok: number;
  failed: number;
}

export interface PipelineContext {
  pipelineId: string;
  runId: string;
  asStage?: { stageId: string; stageExecutionId: string };
  ctx: Readonly<Record<string, unknown>>;
  /** How many times each stage was entered. Per stage, as `StageTable`s: see stage-table.ts. */
  visits: StageTable<number>;
  /**
   * Stage executions this pipeline entered, those of its sub-pipelines included (a sub-pipeline
   * stage is not one itself: its stages are), so a stage can be told how many the run entered
   * before it (`ctx.stagesBefore`) across sub-pipelines and loops, and a resumed run counts on.
   * Absent from snapshots stored before it was kept, where it counts from 0.
   */
  entered?: number;
  /** For a sub-pipeline: the stage executions the run had entered when it started. */
  enteredBefore?: number;
  /** Model calls per stage so far, so a repeated stage's scripted model continues where it was. */
  modelCalls: StageTable<number>;
  /** The latest result of every stage that ended. */
  results: StageTable<StageResult>;
  /** The stage that ended last, whose output is the pipeline's (absent before one ends). */
  lastEnded?: string;
  /** The upstream the next stage entered receives. */
  upstream: StageResult[];
  /** What each stage received when last entered, so REDO can give it the same. */
  upstreamOf: StageTable<StageResult[]>;
  /** The stage (or fan-out stage of the group) running now. */
  current?: string;
  /** The last override: why, from where, and the stage execution (stage and visit) it entered. */
  override?: OverrideNote & { stageId: string; visit: number };
  /** Each parallel group's siblings' states, by the group's fan-out stage. */
  groups: Record<string, StageTable<SiblingState>>;
  /** By group; absent from snapshots stored before it was kept, where it is counted once. */
  tallies?: Record<string, GroupTally>;
  status?: RunStatus;
  error?: ErrorView;
}
