import type { RetryPolicy } from "../definitions/stage.js";

/** The wait before attempt `attempt + 1` (attempt is 1-based). */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  switch (policy.backoff) {
    case "none":
      return 0;
    case "fixed":
      return policy.delayMs;
    case "exponential":
      return Math.min(
        policy.delayMs * 2 ** (attempt - 1),
        policy.maxDelayMs ?? Number.POSITIVE_INFINITY,
      );
  }
}
