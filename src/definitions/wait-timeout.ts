import * as z from "../zod.js";
import type { JsonValue } from "./json.js";

/**
 * A deadline on a wait for a person: how long after the request nobody answering is taken as
 * an answer, and which one. An ask stage's `timeout` fails the stage or takes a default answer;
 * the grants block's `timeout` denies the call (the model hears it) or fails the stage.
 */
export interface WaitTimeout<Then> {
  /** Milliseconds after the request. */
  afterMs: number;
  fallback: Then;
}

export type AskFallback = "fail" | { answer: JsonValue };
export type GrantFallback = "deny" | "fail";
export type AskTimeout = WaitTimeout<AskFallback>;
export type GrantTimeout = WaitTimeout<GrantFallback>;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** `90` (seconds), `"90s"`, `"10m"`, `"2h"`, `"1h30m"`, `"1d"`, `"500ms"` in milliseconds; undefined when it is none. */
export function durationMs(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value * 1_000 : undefined;
  if (typeof value !== "string" || !DURATION.test(value.trim())) return undefined;
  let ms = 0;
  for (const [, amount, unit] of value.trim().matchAll(PART))
    ms += Number(amount) * (UNIT_MS[unit as string] as number);
  return ms;
}

const after = z.transform((value: unknown, ctx): number => {
  const ms = durationMs(value);
  if (ms === undefined || ms <= 0) {
    ctx.issues.push({
      code: "custom",
      message:
        'must be a number of seconds above 0 or a duration such as "90s", "10m", "2h" or "1h30m"',
      input: value,
    });
    return z.NEVER;
  }
  return ms;
});

const timeoutOf = <Then>(fallbackSchema: z.ZodMiniType<Then>, shape: string) =>
  z.pipe(
    z.strictObject(
      { after: z.unknown(), fallback: z.unknown() },
      {
        error: (issue) =>
          issue.code === "unrecognized_keys"
            ? "a timeout takes only after, fallback"
            : `must be { after, fallback: ${shape} }`,
      },
    ),
    z.transform((raw, ctx): WaitTimeout<Then> => {
      const afterMs = parseInto(after, raw.after, ["after"], ctx);
      const fallback = parseInto(fallbackSchema, raw.fallback, ["fallback"], ctx);
      if (afterMs === undefined || fallback === undefined) return z.NEVER;
      return { afterMs, fallback };
    }),
  );

/** Parses a field of a timeout, its issues moved under the field's key; undefined when it fails. */
function parseInto<T>(
  schema: z.ZodMiniType<T>,
  value: unknown,
  path: string[],
  ctx: z.core.ParsePayload,
): T | undefined {
  if (value === undefined) {
    ctx.issues.push({
      code: "custom",
      path,
      message: `a timeout needs ${path.join(".")}`,
      input: value,
    });
    return undefined;
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues)
    ctx.issues.push({ ...issue, path: [...path, ...issue.path], input: value } as never);
  return undefined;
}

const askThen = z.transform((value: unknown, ctx): AskFallback => {
  if (value === "fail") return "fail";
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "answer")
      return { answer: (value as { answer: JsonValue }).answer };
  }
  ctx.issues.push({
    code: "custom",
    message: "must be fail or { answer: <a value the ask's schema accepts> }",
    input: value,
  });
  return z.NEVER;
});

const grantThen = z.enum(["deny", "fail"], {
  error: "must be deny (the call is denied, and the model is told) or fail (the stage fails)",
});

/** An ask stage's `timeout: { after, fallback: fail | { answer } }`; the answer is checked against the ask's schema by the ask. */
export const askTimeoutSchema = timeoutOf(askThen, "fail | { answer }");

/** The grants block's `timeout: { after, fallback: deny | fail }`. */
export const grantTimeoutSchema = timeoutOf(grantThen, "deny | fail");
