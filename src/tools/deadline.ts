/**
 * An AbortSignal that aborts with a `TimeoutError` after `ms`, like `AbortSignal.timeout`, or
 * with the reason of `parent` as soon as that aborts, but whose timer and listener are gone once
 * the work is over: a finished call holds no timer, no memory, and no tie to its caller's signal.
 * One controller per call, where `AbortSignal.any` would keep both signals reachable until the
 * garbage collector runs.
 */
export function deadline(ms: number, parent?: AbortSignal): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const follow = () => controller.abort(parent?.reason);
  if (parent?.aborted) follow();
  else parent?.addEventListener("abort", follow, { once: true });
  const timer = setTimeout(
    () => controller.abort(new DOMException(`timed out after ${ms} ms`, "TimeoutError")),
    ms,
  );
  timer.unref();
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
      parent?.removeEventListener("abort", follow);
    },
  };
}
