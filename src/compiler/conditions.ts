import type { GuardFunction, StageResult, TransitionFacts } from "../definitions/contract.js";
import type { Condition, Rule } from "../definitions/pipeline-types.js";
import { lookup, recordOf, type StageTable } from "./stage-table.js";

/**
 * Whether a transition rule holds for a stage's result: a failed stage is routed only by a rule
 * that tests `verdict` or `error`; a rule without a condition always holds.
 */
export function ruleHolds(
  rule: Rule,
  result: StageResult,
  run: { ctx: Readonly<Record<string, unknown>>; visits: StageTable<number> },
  guards: Record<string, GuardFunction>,
): boolean {
  if (result.verdict === "fail" && !mentionsVerdict(rule.when)) return false;
  if (!rule.when) return true;
  const { verdict, output, parsed, error } = result;
  let visits: Record<string, number> | undefined;
  const facts: TransitionFacts = {
    verdict,
    output,
    parsed,
    ...(error !== undefined && { error }),
    ctx: run.ctx,
    // A guard function or a `visits.<stage>` path reads every count: made for them only.
    get visits() {
      visits ??= recordOf(run.visits);
      return visits;
    },
  };
  return holds(rule.when, facts, guards, (stageId) => lookup(run.visits, stageId) ?? 0);
}

/**
 * Evaluates a transition condition over `{verdict, output, parsed, ctx}` and the visit counts
 * (`visitsOf`, when they are not read from `facts.visits`).
 */
export function holds(
  condition: Condition,
  facts: TransitionFacts,
  guards: Record<string, GuardFunction>,
  visitsOf: (stageId: string) => number = (stageId) => facts.visits[stageId] ?? 0,
): boolean {
  if ("all" in condition) return condition.all.every((c) => holds(c, facts, guards, visitsOf));
  if ("any" in condition) return condition.any.some((c) => holds(c, facts, guards, visitsOf));
  if ("not" in condition) return !holds(condition.not, facts, guards, visitsOf);
  if ("guard" in condition) return guards[condition.guard]?.(facts) ?? false;
  if ("visits" in condition)
    return compare(visitsOf(condition.visits), condition.op, condition.value);
  const value = valueAt(facts, condition.path);
  if (condition.op === "exists") return (value !== undefined) === (condition.value ?? true);
  return compare(value, condition.op, condition.value);
}

/** Whether a condition looks at the verdict or the error: only such rules may route a failed stage. */
export function mentionsVerdict(condition: Condition | undefined): boolean {
  if (!condition) return false;
  if ("all" in condition) return condition.all.some(mentionsVerdict);
  if ("any" in condition) return condition.any.some(mentionsVerdict);
  if ("not" in condition) return mentionsVerdict(condition.not);
  return (
    "path" in condition &&
    (condition.path === "verdict" ||
      condition.path.startsWith("verdict.") ||
      condition.path === "error" ||
      condition.path.startsWith("error."))
  );
}

function valueAt(facts: TransitionFacts, path: string): unknown {
  let value: unknown = facts;
  for (const segment of path.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = Object.hasOwn(value, segment) ? (value as Record<string, unknown>)[segment] : undefined;
  }
  return value;
}

function compare(actual: unknown, op: string, expected: unknown): boolean {
  switch (op) {
    case "equals":
      return deepEqual(actual, expected);
    case "notEquals":
      return !deepEqual(actual, expected);
    case "in":
      return Array.isArray(expected) && expected.some((e) => deepEqual(actual, e));
    case "lt":
      return comparable(actual, expected) && (actual as number) < (expected as number);
    case "lte":
      return comparable(actual, expected) && (actual as number) <= (expected as number);
    case "gt":
      return comparable(actual, expected) && (actual as number) > (expected as number);
    case "gte":
      return comparable(actual, expected) && (actual as number) >= (expected as number);
    default:
      return false;
  }
}

const comparable = (a: unknown, b: unknown): boolean =>
  (typeof a === "number" && typeof b === "number") ||
  (typeof a === "string" && typeof b === "string");

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
