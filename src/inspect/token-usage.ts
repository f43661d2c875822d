import type { AuditEvent } from "../events/audit.js";

export interface TokenCount {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
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
}

/**
 * Tokens per stage execution (in the order they first called the model) and for the run,
 * summed from the `usage` of `ModelTurn` audit events. Turns without usage count nothing.
 */
export function tokenUsage(events: readonly AuditEvent[]): RunTokenCount {
  const stages = new Map<string, StageTokenCount>();
  for (const event of events) {
    const usage = event.type === "ModelTurn" ? usageOf(event.payload) : undefined;
    if (!usage || event.stageExecutionId === undefined) continue;
    const stage = stages.get(event.stageExecutionId) ?? {
      stageId: event.stageId ?? "",
      stageExecutionId: event.stageExecutionId,
      turns: 0,
      ...zero(),
    };
    stages.set(event.stageExecutionId, {
      ...stage,
      turns: stage.turns + 1,
      ...add(stage, usage),
    });
  }
  const list = [...stages.values()];
  return { stages: list, total: list.reduce<TokenCount>((sum, s) => add(sum, s), zero()) };
}

const zero = (): TokenCount => ({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });

function add(sum: TokenCount, usage: { inputTokens: number; outputTokens: number }): TokenCount {
  const inputTokens = sum.inputTokens + usage.inputTokens;
  const outputTokens = sum.outputTokens + usage.outputTokens;
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
}

function usageOf(
  payload: Record<string, unknown>,
): { inputTokens: number; outputTokens: number } | undefined {
  const usage = payload.usage as { inputTokens?: unknown; outputTokens?: unknown } | undefined;
  if (usage === undefined) return undefined;
  const count = (value: unknown) => (typeof value === "number" ? value : 0);
  return { inputTokens: count(usage.inputTokens), outputTokens: count(usage.outputTokens) };
}
