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
        controller = new AbortController();
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
