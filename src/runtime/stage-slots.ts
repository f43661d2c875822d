import type { AnyActorRef, Subscription } from "xstate";
import type { StageSlots } from "../compiler/stage-slots.js";
import { StagechartError } from "../errors.js";

interface Waiter {
  holder: AnyActorRef;
  granted: () => void;
  refused: (error: unknown) => void;
  promise: Promise<void>;
  /** Drops the waiter if its actor ends before a slot is free. */
  watch: Subscription;
}

/**
 * A host's `StageSlots`: at most `limit` stage executions hold a slot, the others wait in the
 * order they asked. A holder's actor is watched: its slot is given back when it ends (its
 * observers are completed or errored however it ends, a stop included) or parks (tag
 * `suspended`: it waits for an answer from outside, and holding on could keep the stages that
 * would let the run suspend from ever running).
 */
export class StageSlotPool implements StageSlots {
  private readonly held = new Map<string, Subscription>();
  private readonly waiting = new Map<string, Waiter>();

  constructor(readonly limit: number) {}

  /** How many stage executions hold a slot now. */
  get inUse(): number {
    return this.held.size;
  }

  hold(owner: string, holder: AnyActorRef): Promise<void> | undefined {
    if (this.held.has(owner)) return undefined;
    const queued = this.waiting.get(owner);
    if (queued) return queued.promise;
    if (this.held.size < this.limit && this.waiting.size === 0) {
      this.take(owner, holder);
      return undefined;
    }
    return this.wait(owner, holder);
  }

  private take(owner: string, holder: AnyActorRef): void {
    const release = () => this.release(owner);
    const watch = holder.subscribe({
      next: (snapshot: { hasTag?(tag: string): boolean }) => {
        if (snapshot.hasTag?.("suspended")) release();
      },
      error: release,
      complete: release,
    });
    this.held.set(owner, watch);
  }

  private wait(owner: string, holder: AnyActorRef): Promise<void> {
    let granted!: () => void;
    let refused!: (error: unknown) => void;
    const promise = new Promise<void>((resolve, reject) => {
      granted = resolve;
      refused = reject;
    });
    // Nobody awaits the refusal of a stopped stage's wait: it must not be an unhandled rejection.
    promise.catch(() => undefined);
    const drop = () => this.drop(owner);
    const watch = holder.subscribe({ error: drop, complete: drop });
    this.waiting.set(owner, { holder, granted, refused, promise, watch });
    return promise;
  }

  private release(owner: string): void {
    const watch = this.held.get(owner);
    if (!watch) return;
    this.held.delete(owner);
    watch.unsubscribe();
    // Granted once the stop that freed it is over: a run cancelled stops all its stages at once,
    // and a sibling waiting for this slot is stopped in the same turn, never set up first.
    queueMicrotask(() => this.grant());
  }

  private drop(owner: string): void {
    const waiter = this.waiting.get(owner);
    if (!waiter) return;
    this.waiting.delete(owner);
    waiter.watch.unsubscribe();
    waiter.refused(
      new StagechartError(
        "Cancellation/StageStopped",
        `stage execution ${owner} ended while it waited for a parallel stage slot`,
      ),
    );
  }

  /** Gives the slots free now to the stage executions waiting longest. */
  private grant(): void {
    for (const [owner, waiter] of this.waiting) {
      if (this.held.size >= this.limit) return;
      this.waiting.delete(owner);
      waiter.watch.unsubscribe();
      this.take(owner, waiter.holder);
      waiter.granted();
    }
  }
}

/** The slots of a host whose cap is `limit`: none to take when it is unlimited. */
export function stageSlotsFor(limit: number): StageSlotPool | undefined {
  if (limit === Number.POSITIVE_INFINITY) return undefined;
  if (!Number.isInteger(limit) || limit < 1)
    throw new StagechartError(
      "Validation/HostLimitInvalid",
      `maxParallelStages must be a whole number of at least 1 (or Infinity, no cap), got ${limit}`,
      { maxParallelStages: limit },
    );
  return new StageSlotPool(limit);
}
