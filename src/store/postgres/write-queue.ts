import { type StagechartError, toStagechartError } from "../../errors.js";

/**
 * Writes made one after another, in the order they were pushed, each started once the one before
 * it is stored. The first that fails stops the queue: nothing pushed after it is written (a later
 * step stored without an earlier one would break the run's history), and every later push and
 * wait is told that failure.
 */
export class WriteQueue {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;
  private failure: StagechartError | undefined;

  /** What stopped the queue, if anything has. */
  get failed(): StagechartError | undefined {
    return this.failure;
  }

  /** Stops the queue (the first failure is the one kept). */
  fail(error: unknown): void {
    this.failure ??= toStagechartError(error, "Session/StoreUnavailable");
  }

  /** Queues `write`; throws the queue's failure instead once it has stopped. */
  push(write: () => Promise<unknown>): void {
    if (this.failure) throw this.failure;
    this.waiting += 1;
    this.tail = this.tail.then(async () => {
      try {
        if (!this.failure) await write();
      } catch (error) {
        this.fail(error);
      } finally {
        this.waiting -= 1;
      }
    });
  }

  /** Resolves once every write pushed so far (and any pushed meanwhile) is stored. */
  async drained(): Promise<void> {
    while (this.waiting > 0) await this.tail;
    if (this.failure) throw this.failure;
  }
}
