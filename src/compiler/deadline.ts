import type { WaitTimeout } from "../definitions/wait-timeout.js";

/** A timer may wait at most this long at once (setTimeout's limit); a longer wait is several. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * Resolves at `until` (epoch ms, as `now` counts), at once when it has passed; rejects with the
 * signal's reason when aborted. The time left is counted from `now` when it starts, so a wait
 * restored from a snapshot waits only what is left of it.
 */
export function sleepUntil(until: number, now: () => number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      const left = until - now();
      if (left <= 0) {
        signal.removeEventListener("abort", abort);
        resolve();
        return;
      }
      timer = setTimeout(arm, Math.min(left, LONGEST_TIMER_MS));
    };
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener("abort", abort, { once: true });
    arm();
  });
}

/** When a wait requested at `now` with this timeout ends (epoch ms). */
export const deadlineOf = (now: number, timeout: WaitTimeout<unknown>): number =>
  now + timeout.afterMs;

/** A deadline as audited and shown: an ISO time. */
export const deadlineIso = (deadline: number): string => new Date(deadline).toISOString();
