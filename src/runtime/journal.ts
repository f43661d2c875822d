/**
 * Recorded model responses and tool results, keyed by idempotency key
 * (`runId / stageExecutionId / attempt / turn / proposalId`). A call whose result is recorded is
 * never made again: after a restore the recorded result is reused.
 */
export interface Journal {
  get(key: string): unknown;
  record(key: string, value: unknown): void;
}

export class MemoryJournal implements Journal {
  private readonly records = new Map<string, string>();

  get(key: string): unknown {
    const recorded = this.records.get(key);
    return recorded === undefined ? undefined : JSON.parse(recorded);
  }

  record(key: string, value: unknown): void {
    this.records.set(key, JSON.stringify(value));
  }
}

export const modelCallKey = (
  runId: string,
  stageExecutionId: string,
  attempt: number,
  turn: number,
): string => `model:${runId}/${stageExecutionId}/${attempt}/${turn}`;

export const toolCallKey = (runId: string, proposalId: string): string =>
  `tool:${runId}/${proposalId}`;
