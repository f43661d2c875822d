/**
 * The audit event vocabulary: what a run records, append-only, one event per boundary, with a
 * gapless `seq` per run. Every layer that emits or reads events (compiler, runtime, store,
 * testing, inspect) imports it from here, at the bottom of the stack.
 */
export const AUDIT_EVENT_TYPES = [
  "RunStarted",
  "RunResumed",
  /** A run that ended done, reopened by a redo: the stage run again, who and why. */
  "RunReopened",
  /** A resume, answer or control event the run refused, with the error; nothing else changed. */
  "RequestRefused",
  /**
   * After RunStarted or RunResumed, when the run's Bash will not be sandboxed: `{mode, reason,
   * bash: "unconfined" | "refused"}`, with `allowUnconfined: true` when the host's opt-in let it
   * run unconfined.
   */
  "SandboxUnavailable",
  "RunSuspended",
  "RunCompleted",
  "RunFailed",
  "RunCancelled",
  "StageSetup",
  "StageInitFailed",
  "StageInit",
  "CheckGateOutcome",
  /**
   * A model call answered: `{turn, outcome, tools, usage, durationMs, model, costUsd?}` —
   * `usage` the tokens the reply reports (`cachedInputTokens` among the input when the provider
   * says), `durationMs` the call's wall time in this process (about 0 for a reply the journal
   * already held), `model` its name (`openai:gpt-4o`), `costUsd` what it cost at the model's
   * price (absent when the model has none); a failed call is `{turn, outcome: "error", error}`.
   * Runs stored before a field was recorded lack it.
   */
  "ModelTurn",
  "ToolProposed",
  "ToolApproved",
  "ToolDenied",
  "GrantRequested",
  "GrantIssued",
  "GrantConsumed",
  /** A tool call ran: the call's `{proposalId, tool, argsSummary, …}` and its `durationMs`. */
  "ToolSucceeded",
  "ToolFailed",
  "CompletionRejected",
  "Steered",
  "CapHit",
  /**
   * A model call was not made: it would have started past a budget of the pipeline's.
   * `{scope: "run" | "stage", limit, max, spent}`; the stage then fails with
   * `Cancellation/BudgetExceeded`.
   */
  "BudgetExceeded",
  "StageAssertOutcome",
  "StageRetry",
  "StageExited",
  "StageCancelled",
  "SMTransition",
  "ParallelSiblingFailure",
  "OverrideApplied",
  /** An ask stage asks a person for a value (its prompt and schema); answered with the value and who gave it. */
  "InputRequested",
  "InputAnswered",
  /**
   * Nobody answered a wait before its deadline: an ask stage's (`{kind: "ask", deadline, fallback:
   * "answer" | "fail"}`) or a grant request's (`{kind: "grant", deadline, fallback: "deny" |
   * "fail", proposalId}`). The timeout's answer follows (InputAnswered by `deadline`, ToolDenied from
   * `deadline`), or the stage fails with `Cancellation/WaitTimedOut`.
   */
  "WaitTimedOut",
  /** The first event of a forked run: the run and step it was forked from, and ctx changes. */
  "RunForked",
  /** A control event another process asked the run's owner for, through the store: who asked. */
  "ControlRequested",
  /** A pipeline's `onTransition` hook threw: the state it was told of, and the error. */
  "TransitionHookFailed",
] as const;

export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** What an emitter knows; the sink adds `seq` and `at`. */
export interface AuditEventInput {
  type: AuditEventType;
  runId: string;
  stageId?: string;
  stageExecutionId?: string;
  attempt?: number;
  payload: Record<string, unknown>;
  /**
   * When it happened, for an event audited after the fact (a stage's Setup and Init, audited
   * once its CheckGate has answered); the sink's clock stamps the others.
   */
  at?: string;
}

export interface AuditEvent extends AuditEventInput {
  /** Gapless per run, from 1. */
  seq: number;
  at: string;
  /**
   * Only on an event read back from a damaged store row: what is wrong with it. Its payload is
   * then empty; the rest of the log is still there around it.
   */
  damaged?: string;
}

export const isAuditEventType = (type: string): type is AuditEventType =>
  (AUDIT_EVENT_TYPES as readonly string[]).includes(type);

export interface AuditSink {
  /** Records an event and returns it as recorded, with its `seq` and `at`. */
  emit(event: AuditEventInput): AuditEvent;
}

/** The in-memory audit log: gapless sequence numbers per run, listeners told in order. */
export class MemoryAuditLog implements AuditSink {
  readonly events: AuditEvent[] = [];
  private readonly listeners = new Set<(event: AuditEvent) => void>();
  private readonly lastSeq = new Map<string, number>();

  private readonly stamp: () => string;

  constructor(now: () => number = Date.now) {
    this.stamp = isoStamps(now);
  }

  emit(input: AuditEventInput): AuditEvent {
    const seq = (this.lastSeq.get(input.runId) ?? 0) + 1;
    this.lastSeq.set(input.runId, seq);
    const event = stamped(seq, input.at ?? this.stamp(), input);
    this.events.push(event);
    for (const listener of this.listeners) listener(event);
    return event;
  }

  /** The events of one run, in order. */
  of(runId: string): AuditEvent[] {
    return this.events.filter((event) => event.runId === runId);
  }

  subscribe(listener: (event: AuditEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

const STAGE_EVENT_KEYS = ["type", "runId", "stageId", "stageExecutionId", "attempt", "payload"];
const RUN_EVENT_KEYS = ["type", "runId", "payload"];

/** Whether `input`'s keys are `expected`, in order, then perhaps `at` (walked, not listed). */
function keysAre(input: AuditEventInput, expected: readonly string[]): boolean {
  let at = 0;
  for (const key in input) {
    if (at < expected.length ? key !== expected[at] : at > expected.length || key !== "at")
      return false;
    at++;
  }
  return at >= expected.length;
}

/**
 * `{seq, at, ...input}`, the event as recorded (the same keys in the same order). The two shapes
 * nearly every event has are written out: spread into a literal of two keys, an event's other
 * keys went to a separate backing store, which a log kept for the host's life paid for per event.
 */
export function stamped(seq: number, at: string, input: AuditEventInput): AuditEvent {
  if (keysAre(input, STAGE_EVENT_KEYS)) {
    const { type, runId, stageId, stageExecutionId, attempt, payload } = input;
    return { seq, at, type, runId, stageId, stageExecutionId, attempt, payload };
  }
  if (keysAre(input, RUN_EVENT_KEYS)) {
    const { type, runId, payload } = input;
    return { seq, at, type, runId, payload };
  }
  return { seq, at, ...input } as AuditEvent;
}

/** The clock's time as ISO 8601, formatted once per millisecond: a turn emits several events in one. */
export function isoStamps(now: () => number): () => string {
  let lastMs = Number.NaN;
  let lastIso = "";
  return () => {
    const ms = now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastIso = new Date(ms).toISOString();
    }
    return lastIso;
  };
}
