import type { InputRequest } from "../compiler/ask-stage.js";
import type { JsonValue } from "../definitions/contract.js";

/** What the pages hear of live runs' ask stages: the questions each run waits on now. */
export type AskNews = { type: "asks"; runId: string; asks: InputRequest[] };

/**
 * The questions live runs' ask stages put to the pages, until a page answers one (the value is
 * sent back to the run) or the run withdraws it (answered elsewhere, or ended).
 */
export class PendingAsks {
  private readonly pending = new Map<
    string,
    { request: InputRequest; answer: (value: JsonValue) => void }
  >();

  constructor(private readonly tell: (news: AskNews) => void) {}

  ask(request: InputRequest, answer: (value: JsonValue) => void): void {
    this.pending.set(request.stageExecutionId, { request, answer });
    this.tellAsks(request.runId);
  }

  withdraw(stageExecutionId: string): void {
    const pending = this.pending.get(stageExecutionId);
    if (!pending) return;
    this.pending.delete(stageExecutionId);
    this.tellAsks(pending.request.runId);
  }

  /** The question a live run waits on at that stage execution, if it does. */
  find(runId: string, stageExecutionId: string): InputRequest | undefined {
    const pending = this.pending.get(stageExecutionId);
    return pending?.request.runId === runId ? pending.request : undefined;
  }

  pendingOf(runId: string): InputRequest[] {
    return [...this.pending.values()]
      .filter((p) => p.request.runId === runId)
      .map((p) => p.request);
  }

  /** Sends a (checked) value to the live run that asked, if one still waits (see `find`). */
  answer(runId: string, stageExecutionId: string, value: JsonValue): void {
    const pending = this.pending.get(stageExecutionId);
    if (!pending || pending.request.runId !== runId) return;
    pending.answer(value);
    this.withdraw(stageExecutionId);
  }

  private tellAsks(runId: string): void {
    this.tell({ type: "asks", runId, asks: this.pendingOf(runId) });
  }
}
