import type { AuditEvent, AuditSink } from "../events/audit.js";

/** Audit events of one run as a live stream: forwarded to the host's sink, and to readers. */
export class EventFeed {
  private readonly buffer: AuditEvent[] = [];
  private readonly waiting: (() => void)[] = [];
  private closed = false;

  tee(sink: AuditSink, runId: string): AuditSink {
    return {
      emit: (input) => {
        const event = sink.emit(input);
        if (event.runId === runId) this.push(event);
        return event;
      },
    };
  }

  private push(event: AuditEvent): void {
    this.buffer.push(event);
    // Nobody waits for nearly every event: no emptied copy of the waiting list is made then.
    if (this.waiting.length > 0) for (const wake of this.waiting.splice(0)) wake();
  }

  close(): void {
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake();
  }

  async *iterate(): AsyncIterable<AuditEvent> {
    let next = 0;
    while (true) {
      if (next < this.buffer.length) {
        yield this.buffer[next++] as AuditEvent;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }
}
