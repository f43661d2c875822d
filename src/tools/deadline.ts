/**
 * An AbortSignal that aborts with a `TimeoutError` after `ms`, like `AbortSignal.timeout`, but
 * whose timer is cleared once the work is over: a finished call holds no timer and no memory.
 */
export function deadline(ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`timed out after ${ms} ms`, "TimeoutError")),
    ms,
  );
  timer.unref();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}
