import { getEventListeners } from "node:events";

/** A timeout for one call: its signal, and `clear` for when the call is over. */
export interface Deadline {
  /** Built on first read: an `AbortSignal` costs microseconds, and many calls never look at it. */
  readonly signal: AbortSignal;
  clear(): void;
}

/**
 * An AbortSignal that aborts with a `TimeoutError` after `ms`, like `AbortSignal.timeout`, or
 * with the reason of `parent` as soon as that aborts, but whose timer and listener are gone once
 * the work is over: a finished call holds no timer, no memory, and no tie to its caller's signal.
 * One controller per call, where `AbortSignal.any` would keep both signals reachable until the
 * garbage collector runs. `onAbort` hears the reason first, without a listener on the signal.
 */
export function deadline(
  ms: number,
  parent?: AbortSignal,
  onAbort?: (reason: unknown) => void,
): Deadline {
  return deadlineOn(() => new AbortController(), ms, parent, onAbort);
}

/**
 * Deadlines for calls like `deadline`'s, whose signal is that of an earlier call when nothing can
 * hear it abort any more: that call is over (its deadline cleared), its signal never aborted,
 * and no listener is left on it. Building an `AbortController` costs ~3 µs, which a model call
 * made every turn would otherwise pay each time; a provider that leaves a listener behind (as
 * `fetch` does until the request is collected) gets a fresh signal, as do concurrent calls.
 */
export function deadlineSeries(): (ms: number, parent?: AbortSignal) => Deadline {
  let spare: AbortController | undefined;
  return (ms, parent) => {
    let taken: AbortController | undefined;
    const take = () => {
      taken =
        spare && !spare.signal.aborted && unheard(spare.signal) ? spare : new AbortController();
      if (taken === spare) spare = undefined;
      return taken;
    };
    const timeout = deadlineOn(take, ms, parent);
    return {
      get signal() {
        return timeout.signal;
      },
      clear: () => {
        timeout.clear();
        if (taken) spare = taken;
      },
    };
  };
}

const unheard = (signal: AbortSignal): boolean => getEventListeners(signal, "abort").length === 0;

function deadlineOn(
  controllerOf: () => AbortController,
  ms: number,
  parent?: AbortSignal,
  onAbort?: (reason: unknown) => void,
): Deadline {
  let controller: AbortController | undefined;
  let aborted: { reason: unknown } | undefined;
  const abort = (reason: unknown) => {
    if (aborted) return;
    aborted = { reason };
    onAbort?.(reason);
    controller?.abort(reason);
  };
  const follow = () => abort(parent?.reason);
  if (parent?.aborted) follow();
  else parent?.addEventListener("abort", follow, { once: true });
  const timer = setTimeout(
    () => abort(new DOMException(`timed out after ${ms} ms`, "TimeoutError")),
    ms,
  );
  timer.unref();
  return {
    get signal() {
      if (!controller) {
        controller = controllerOf();
        if (aborted) controller.abort(aborted.reason);
      }
      return controller.signal;
    },
    clear: () => {
      clearTimeout(timer);
      parent?.removeEventListener("abort", follow);
    },
  };
}
