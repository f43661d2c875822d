import type { JsonValue, OverrideNote } from "../definitions/contract.js";
import type { StageDefinition } from "../definitions/stage.js";
import type { GrantTimeout } from "../definitions/wait-timeout.js";
import type { AuditEventInput } from "../events/audit.js";
import type { StageSlots } from "./stage-slots.js";
import type {
  AssertOutcome,
  AttemptRecord,
  GateAnswer,
  GrantDecision,
  GrantRequest,
  PolicyDecision,
  ProposedCall,
  StageContext,
  StageResult,
  ToolRun,
  TranscriptEntry,
  TurnOutcome,
} from "./stage-types.js";

/**
 * Everything the stage lifecycle machine asks of the world. The machine itself is pure
 * routing; the runtime builds these from a host (src/runtime/stage-services.ts), tests and
 * embedders may build their own. Failures are thrown as StagechartError.
 */
export interface StageServices {
  /** Resolves the envelope, checks the model and the upstream inputs, builds the StageContext. */
  setup(input: SetupInput): Promise<SetupOutput>;
  /** Renders the body: the system prompt. */
  init(input: { stage: StageDefinition; stageContext: StageContext }): Promise<string>;
  checkGate(input: { stage: StageDefinition; stageContext: StageContext }): Promise<GateAnswer>;
  /**
   * One model turn over the transcript so far, classified by the Act rules. `signal` is the
   * attempt's: every call of an attempt gets the same one, which lives as long as the attempt.
   */
  callModel(input: ModelCallInput, signal: AbortSignal): Promise<TurnOutcome>;
  /** The pipeline's own `grants` policy, asked before any interactor. */
  grantPolicy(request: GrantRequest): PolicyDecision;
  /** Whether anyone can answer a grant request (false: headless). */
  hasInteractors(): boolean;
  /** What a headless run does with a grant request nobody can answer. */
  unansweredGrants: "deny" | "suspend";
  /** How long a grant request left to a person waits, and what then (the pipeline's grants block). */
  grantTimeout?: GrantTimeout;
  /** Asks every interactor; the first answer wins. */
  askInteractors(request: GrantRequest, signal: AbortSignal): Promise<GrantDecision>;
  isKnownTool(name: string): boolean;
  /** Guard rules, run on every approved call; the name of the rule that denies it, if one does. */
  deniedByGuard(call: ProposedCall): string | undefined;
  runTool(input: ToolCallInput, signal: AbortSignal): Promise<ToolRun>;
  assert(input: AssertInput): Promise<AssertOutcome>;
  /** Exit: the output the stage hands on (undefined: none). */
  exit(input: ExitInput): Promise<JsonValue | undefined>;
  /** Writes one transcript entry under its position key (a repeat overwrites, never duplicates). */
  writeTranscript(
    runId: string,
    stageExecutionId: string,
    key: string,
    entry: TranscriptEntry,
  ): void;
  audit(event: AuditEventInput): void;
  now(): number;
  /** The session's parallel stage cap: a stage holds a slot while it works (none: no cap). */
  slots?: StageSlots;
  /** How many provider errors in a row a stage retries, and how long it waits before each. */
  /** How long to wait before the next try: the backoff, or longer if the provider asked. */
  providerRetries: { max: number; delayMs(failures: number, error: unknown): number };
}

export interface SetupInput {
  stage: StageDefinition;
  runId: string;
  stageExecutionId: string;
  ctx: Readonly<Record<string, unknown>>;
  upstream: readonly StageResult[];
  stagesBefore?: number;
  /** Why an override entered the stage execution, when one did: `ctx.override`. */
  override?: OverrideNote;
}

export interface SetupOutput {
  stageContext: StageContext;
  /** allowedTools ∩ host tools, in the stage's order. */
  envelope: string[];
}

export interface ModelCallInput {
  stage: StageDefinition;
  runId: string;
  pipelineId?: string;
  stageExecutionId: string;
  attempt: number;
  /** 1-based; the model sees the transcript written before this turn. */
  turn: number;
  /** Model calls so far in this stage execution, failed ones included. */
  modelCalls: number;
  /** Model calls so far for this stage in the whole run: where a scripted model continues. */
  position: number;
  envelope: string[];
}

export interface ToolCallInput {
  runId: string;
  stageExecutionId: string;
  call: ProposedCall;
}

export interface AssertInput {
  stage: StageDefinition;
  stageContext: StageContext;
  parsed?: JsonValue;
  capHit: boolean;
  attempt: number;
  /** Every attempt so far, the current one last. */
  attempts: AttemptRecord[];
}

export interface ExitInput extends AssertInput {
  verdict: "ok" | "skip";
  reason?: string;
  outputFields?: readonly string[];
}
