/** Audit events (DESIGN.md §7): append-only, one per boundary, gapless `seq` per run. */
export const AUDIT_EVENT_TYPES = [
  "RunStarted",
  "RunResumed",
  "RunSuspended",
  "RunCompleted",
  "RunFailed",
  "RunCancelled",
  "StageSetup",
  "StageInitFailed",
  "StageInit",
  "CheckGateOutcome",
  "ModelTurn",
  "ToolProposed",
  "ToolApproved",
  "ToolDenied",
  "GrantRequested",
  "GrantIssued",
  "GrantConsumed",
  "ToolSucceeded",
  "ToolFailed",
  "CompletionRejected",
  "Steered",
  "CapHit",
  "StageAssertOutcome",
  "StageRetry",
  "StageExited",
  "StageCancelled",
  "SMTransition",
  "ParallelSiblingFailure",
  "OverrideApplied",
] as const;

export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** What an emitter knows; the sink adds `seq`, `at` and `runId`. */
export interface AuditEventInput {
  type: AuditEventType;
  stageId?: string;
  stageExecutionId?: string;
  attempt?: number;
  payload: Record<string, unknown>;
}

export interface AuditEvent extends AuditEventInput {
  seq: number;
  at: string;
  runId: string;
}

export interface AuditSink {
  emit(event: AuditEventInput): void;
}

/** The in-memory audit log: assigns gapless sequence numbers and notifies listeners in order. */
export class MemoryAuditLog implements AuditSink {
  readonly events: AuditEvent[] = [];
  private readonly listeners = new Set<(event: AuditEvent) => void>();

  constructor(
    readonly runId: string,
    private readonly now: () => number = Date.now,
  ) {}

  emit(input: AuditEventInput): void {
    const event: AuditEvent = {
      seq: this.events.length + 1,
      at: new Date(this.now()).toISOString(),
      runId: this.runId,
      ...input,
    };
    this.events.push(event);
    for (const listener of this.listeners) listener(event);
  }

  subscribe(listener: (event: AuditEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
