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

/** The n-th model call of a stage execution (failed calls count: a retry is the next call). */
export const modelCallKey = (runId: string, stageExecutionId: string, call: number): string =>
  `model:${runId}/${stageExecutionId}/${call}`;

export const toolCallKey = (runId: string, proposalId: string): string =>
  `tool:${runId}/${proposalId}`;
