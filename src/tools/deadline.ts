import { getEventListeners } from "node:events";

/** A timeout for one call: its signal, and `clear` for when the call is over. */
export interface Deadline {
  /** Built on first read: an `AbortSignal` costs microseconds, and many calls never look at it. */
  readonly signal: AbortSignal;
  clear(): void;
}

/**
 * An AbortSignal that aborts with a `TimeoutError` after `ms`, like `AbortSignal.timeout`, or
 * with the reason of `parent` as soon as that aborts, but whose timer is gone and which no longer
 * follows `parent` once the work is over: a finished call holds no timer, no memory, and no tie to
 * its caller's signal. One controller per call, where `AbortSignal.any` would keep both signals
 * reachable until the garbage collector runs. `onAbort` hears the reason first, without a
 * listener on the signal.
 */
export function deadline(
  ms: number,
  parent?: AbortSignal,
  onAbort?: (reason: unknown) => void,
): Deadline {
  return new CallDeadline(ms, parent, onAbort);
}

/**
 * Deadlines for calls like `deadline`'s, whose signal is that of an earlier call when nothing can
 * hear it abort any more: that call is over (its deadline cleared), its signal never aborted,
 * and no listener is left on it. Building an `AbortController` costs ~3 µs, which a model call
 * made every turn would otherwise pay each time; a provider that leaves a listener behind (as
 * `fetch` does until the request is collected) gets a fresh signal, as do concurrent calls.
 */
export function deadlineSeries(): (ms: number, parent?: AbortSignal) => Deadline {
  const series = new SpareController();
  return (ms, parent) => new CallDeadline(ms, parent, undefined, series);
}

/** The controller of a call that is over, kept for the next call while nothing can hear it. */
class SpareController {
  private spare: AbortController | undefined;

  take(): AbortController {
    const { spare } = this;
    this.spare = undefined;
    return spare && !spare.signal.aborted && unheard(spare.signal) ? spare : new AbortController();
  }

  giveBack(controller: AbortController): void {
    this.spare = controller;
  }
}

const unheard = (signal: AbortSignal): boolean => getEventListeners(signal, "abort").length === 0;

class CallDeadline implements Deadline {
  private controller: AbortController | undefined;
  private aborted: { reason: unknown } | undefined;
  /** Its controller was given back to the series: nothing of this call is left to abort. */
  private over = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    ms: number,
    private readonly parent: AbortSignal | undefined,
    private readonly onAbort: ((reason: unknown) => void) | undefined,
    private series?: SpareController,
  ) {
    if (parent?.aborted) this.abort(parent.reason);
    else if (parent) follow(parent, this);
    this.timer = setTimeout(timeUp, ms, this, ms);
    this.timer.unref();
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = this.series?.take() ?? new AbortController();
      if (this.aborted) this.controller.abort(this.aborted.reason);
    }
    return this.controller.signal;
  }

  /** Bound: callers take it apart (`const { signal, clear } = deadline(…)`). */
  readonly clear = (): void => {
    clearTimeout(this.timer);
    if (this.parent) unfollow(this.parent, this);
    if (this.series && this.controller) {
      this.series.giveBack(this.controller);
      // A later call may be using it now: this deadline no longer aborts it.
      this.controller = undefined;
      this.over = true;
    }
    // Given back once: a later call may be using it by the time this is cleared again.
    this.series = undefined;
  };

  abort(reason: unknown): void {
    if (this.aborted || this.over) return;
    this.aborted = { reason };
    this.onAbort?.(reason);
    this.controller?.abort(reason);
  }
}

const timeUp = (expired: CallDeadline, ms: number) =>
  expired.abort(new DOMException(`timed out after ${ms} ms`, "TimeoutError"));

/**
 * The deadlines following each signal. A signal gets one listener, which tells them all, where
 * one listener each (added and removed with every call) cost more than the calls' own bookkeeping.
 */
const followers = new WeakMap<AbortSignal, Set<CallDeadline>>();

function follow(parent: AbortSignal, deadline: CallDeadline): void {
  let following = followers.get(parent);
  if (!following) {
    const all = new Set<CallDeadline>();
    following = all;
    followers.set(parent, all);
    parent.addEventListener(
      "abort",
      () => {
        for (const each of [...all]) {
          try {
            each.abort(parent.reason);
          } catch (error) {
            // One follower's failing `onAbort` must not keep the others from hearing it.
            queueMicrotask(() => {
              throw error;
            });
          }
        }
        all.clear();
      },
      { once: true },
    );
  }
  following.add(deadline);
}

function unfollow(parent: AbortSignal, deadline: CallDeadline): void {
  followers.get(parent)?.delete(deadline);
}
