import type { AuditEvent, AuditSink } from "../events/audit.js";
import type { ModelDelta, RunEvent } from "../events/run-events.js";

/**
 * The events of one run as a live stream: its audit events (forwarded to the host's sink, and
 * kept for every reader from the first), and the pieces of model replies as they stream, queued
 * only for the readers there are when they come, and dropped once read: a run nobody watches
 * keeps none of them.
 */
export class EventFeed {
  private readonly buffer: AuditEvent[] = [];
  private readonly waiting: (() => void)[] = [];
  /** Each delta reader's queue: a delta with the number of audit events that came before it. */
  private readonly deltaReaders = new Set<{ at: number; delta: ModelDelta }[]>();
  private closed = false;

  tee(sink: AuditSink, runId: string): AuditSink {
    return {
      emit: (input) => {
        const event = sink.emit(input);
        if (event.runId === runId) {
          this.buffer.push(event);
          this.wake();
        }
        return event;
      },
    };
  }

  /** Whether any reader takes the pieces of replies now. */
  readsDeltas(): boolean {
    return this.deltaReaders.size > 0;
  }

  /** A piece of a streaming reply, for the readers there are now. */
  delta(delta: ModelDelta): void {
    if (this.deltaReaders.size === 0) return;
    const at = this.buffer.length;
    for (const queue of this.deltaReaders) queue.push({ at, delta });
    this.wake();
  }

  private wake(): void {
    // Nobody waits for nearly every event: no emptied copy of the waiting list is made then.
    if (this.waiting.length > 0) for (const wake of this.waiting.splice(0)) wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  /** The audit events from the first, and with `deltas` the pieces of replies between them. */
  async *iterate(deltas = true): AsyncIterable<RunEvent> {
    const queue: { at: number; delta: ModelDelta }[] = [];
    if (deltas) this.deltaReaders.add(queue);
    let next = 0;
    try {
      while (true) {
        const first = queue[0];
        if (first && first.at <= next) {
          queue.shift();
          yield first.delta;
          continue;
        }
        if (next < this.buffer.length) {
          yield this.buffer[next++] as AuditEvent;
          continue;
        }
        if (this.closed) return;
        await new Promise<void>((resolve) => this.waiting.push(resolve));
      }
    } finally {
      this.deltaReaders.delete(queue);
    }
  }
}
