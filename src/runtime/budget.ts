import type { ModelCallInput } from "../compiler/stage-services-port.js";
import type { Budget, PipelineBudget } from "../definitions/pipeline-types.js";
import { StagechartError } from "../errors.js";
import type { AuditEvent, AuditEventInput, AuditSink } from "../events/audit.js";

/** What model calls spent, and since when (ms since the epoch) the wall-time limit counts. */
interface Spent {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  since?: number;
}

/** A limit a call would start past: which, of what, how much was allowed and spent. */
export interface BudgetBreach {
  scope: "run" | "stage";
  limit: keyof Budget;
  max: number;
  spent: number;
}

/**
 * A run's spending against its pipeline's budget, kept from the run's own audit events: each
 * model turn's tokens and cost, the run's start (`RunStarted`, else when the watch was made) and
 * each stage execution's first event. A resumed run's is given the events it stored first (`observe` each), so the budget
 * counts the whole run, not what this process saw. Every stage of the run, parallel siblings
 * included, shares the run's tally.
 */
export class BudgetWatch {
  private readonly run: Spent = { inputTokens: 0, outputTokens: 0, costUsd: 0 };
  private readonly stages = new Map<string, Spent>();
  private readonly turns = new Set<string>();

  constructor(
    private readonly budget: PipelineBudget,
    /** The run's pipeline: its stages' budgets apply, a sub-pipeline's stages' do not. */
    private readonly pipelineId: string,
    private readonly now: () => number,
  ) {
    // A run is timed from its start: now, unless its stored `RunStarted` says otherwise.
    this.run.since = now();
  }

  /** Counts an event of the run. */
  observe(
    event: Pick<AuditEvent, "type" | "at" | "stageExecutionId" | "attempt" | "payload">,
  ): void {
    const at = Date.parse(event.at);
    if (event.type === "RunStarted") this.run.since = at;
    const stage =
      event.stageExecutionId === undefined ? undefined : this.stageOf(event.stageExecutionId, at);
    if (event.type !== "ModelTurn" || !this.firstTime(event)) return;
    const usage = event.payload.usage as
      | { inputTokens?: unknown; outputTokens?: unknown }
      | undefined;
    const cost = event.payload.costUsd;
    for (const spent of stage ? [this.run, stage] : [this.run]) {
      if (typeof usage?.inputTokens === "number") spent.inputTokens += usage.inputTokens;
      if (typeof usage?.outputTokens === "number") spent.outputTokens += usage.outputTokens;
      if (typeof cost === "number") spent.costUsd += cost;
    }
  }

  /** The first limit the call would start past, the run's before the stage's; none: undefined. */
  breachOf(
    call: Pick<ModelCallInput, "stage" | "pipelineId" | "stageExecutionId">,
  ): BudgetBreach | undefined {
    const now = this.now();
    const run = this.budget.run && reached(this.budget.run, this.run, now);
    if (run) return { scope: "run", ...run };
    // A sub-pipeline's stage of the same id is not the run's pipeline's.
    const own =
      call.pipelineId === undefined || call.pipelineId === this.pipelineId
        ? this.budget.stages?.[call.stage.id]
        : undefined;
    const stage = own && reached(own, this.stageOf(call.stageExecutionId, now), now);
    return stage && { scope: "stage", ...stage };
  }

  /**
   * Whether this is the first the watch hears of the turn: a resumed run audits again the turns
   * it replays from its journal, which cost nothing the second time.
   */
  private firstTime(event: Pick<AuditEvent, "stageExecutionId" | "attempt" | "payload">): boolean {
    const key = `${event.stageExecutionId}/${event.attempt}/${String(event.payload.turn)}`;
    if (this.turns.has(key)) return false;
    this.turns.add(key);
    return true;
  }

  private stageOf(stageExecutionId: string, at: number): Spent {
    let spent = this.stages.get(stageExecutionId);
    if (!spent) {
      spent = { inputTokens: 0, outputTokens: 0, costUsd: 0, since: at };
      this.stages.set(stageExecutionId, spent);
    }
    return spent;
  }
}

function reached(
  budget: Budget,
  spent: Spent,
  now: number,
): Omit<BudgetBreach, "scope"> | undefined {
  const checks: [keyof Budget, number][] = [
    ["maxInputTokens", spent.inputTokens],
    ["maxOutputTokens", spent.outputTokens],
    ["maxCostUsd", spent.costUsd],
    ["maxSeconds", spent.since === undefined ? 0 : (now - spent.since) / 1000],
  ];
  for (const [limit, used] of checks) {
    const max = budget[limit];
    if (max !== undefined && used >= max) return { limit, max, spent: used };
  }
  return undefined;
}

const UNITS: Record<keyof Budget, (n: number) => string> = {
  maxInputTokens: (n) => `${n} input tokens`,
  maxOutputTokens: (n) => `${n} output tokens`,
  maxCostUsd: (n) => `$${Number(n.toPrecision(6))}`,
  maxSeconds: (n) => `${Number(n.toFixed(1))} s`,
};

/** `Cancellation/BudgetExceeded`, saying which budget, and what was spent of what. */
export function budgetExceeded(breach: BudgetBreach, stageId: string): StagechartError {
  const unit = UNITS[breach.limit];
  const whose = breach.scope === "run" ? "the run's budget" : `stage ${stageId}'s budget`;
  return new StagechartError(
    "Cancellation/BudgetExceeded",
    `${whose} is spent: ${unit(breach.spent)} of ${unit(breach.max)} (${breach.limit}); the model call was not made`,
    { ...breach },
  );
}

/** `sink`, telling `watch` each event as it is recorded. */
export function watchedAudit(sink: AuditSink, watch: BudgetWatch): AuditSink {
  return {
    emit(input: AuditEventInput) {
      const event = sink.emit(input);
      watch.observe(event);
      return event;
    },
  };
}
