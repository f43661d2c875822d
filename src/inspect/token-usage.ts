import type { AuditEvent } from "../events/audit.js";

export interface TokenCount {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** US dollars, summed over the turns whose model had a price. */
  costUsd: number;
  /** Turns whose model had no price: their tokens are counted, their cost is not. */
  unpricedTurns: number;
}

export interface StageTokenCount extends TokenCount {
  stageId: string;
  stageExecutionId: string;
  /** Model turns that reported usage. */
  turns: number;
}

export interface RunTokenCount {
  stages: StageTokenCount[];
  total: TokenCount;
  /** The models of the run's unpriced turns, by name (`scripted:review.script.yaml`). */
  unpricedModels: string[];
}

/**
 * Tokens and cost per stage execution (in the order they first called the model) and for the
 * run, summed from the `usage` and `costUsd` of `ModelTurn` audit events. Turns without usage
 * count nothing, a turn audited again when a resumed run replayed it is counted once, and a turn
 * without a cost is counted as unpriced, with its model.
 */
export function tokenUsage(events: readonly AuditEvent[]): RunTokenCount {
  const stages = new Map<string, StageTokenCount>();
  const unpricedModels = new Set<string>();
  // A resumed run audits again the turns it replays from its journal: counted once.
  const counted = new Set<string>();
  for (const event of events) {
    const turn = event.type === "ModelTurn" ? turnOf(event.payload) : undefined;
    if (!turn || event.stageExecutionId === undefined) continue;
    const key = `${event.stageExecutionId}/${event.attempt}/${String(event.payload.turn)}`;
    if (counted.has(key)) continue;
    counted.add(key);
    if (turn.costUsd === undefined) unpricedModels.add(turn.model ?? "an unnamed model");
    const stage = stages.get(event.stageExecutionId) ?? {
      stageId: event.stageId ?? "",
      stageExecutionId: event.stageExecutionId,
      turns: 0,
      ...zero(),
    };
    stages.set(event.stageExecutionId, { ...stage, turns: stage.turns + 1, ...add(stage, turn) });
  }
  const list = [...stages.values()];
  return {
    stages: list,
    total: list.reduce<TokenCount>((sum, s) => add(sum, s), zero()),
    unpricedModels: [...unpricedModels],
  };
}

const zero = (): TokenCount => ({
  inputTokens: 0,
  outputTokens: 0,
  totalTokens: 0,
  costUsd: 0,
  unpricedTurns: 0,
});

interface Turn {
  inputTokens: number;
  outputTokens: number;
  model?: string;
  costUsd?: number;
  unpricedTurns?: number;
}

function add(sum: TokenCount, turn: Turn): TokenCount {
  const inputTokens = sum.inputTokens + turn.inputTokens;
  const outputTokens = sum.outputTokens + turn.outputTokens;
  return {
    inputTokens,
    outputTokens,
    totalTokens: inputTokens + outputTokens,
    costUsd: sum.costUsd + (turn.costUsd ?? 0),
    unpricedTurns: sum.unpricedTurns + (turn.unpricedTurns ?? (turn.costUsd === undefined ? 1 : 0)),
  };
}

function turnOf(payload: Record<string, unknown>): Turn | undefined {
  const usage = payload.usage as { inputTokens?: unknown; outputTokens?: unknown } | undefined;
  if (usage === undefined) return undefined;
  const count = (value: unknown) => (typeof value === "number" ? value : 0);
  return {
    inputTokens: count(usage.inputTokens),
    outputTokens: count(usage.outputTokens),
    ...(typeof payload.model === "string" && { model: payload.model }),
    ...(typeof payload.costUsd === "number" && { costUsd: payload.costUsd }),
  };
}

/** A cost as people read it: dollars to four significant places (`$0.01234`, `$12.35`). */
export function formatUsd(usd: number): string {
  if (usd === 0) return "$0";
  if (usd >= 1) return `$${usd.toFixed(2)}`;
  return `$${usd.toPrecision(4).replace(/0+$/, "").replace(/\.$/, "")}`;
}
