import { closestName } from "./closest-name.js";

const NO_TIME_LIMIT =
  "a stage file sets no time limit: the pipeline's budget block does (budget.stages.<stage id>.maxSeconds), and the host option modelCallTimeoutMs bounds each model call";
const NO_BUDGET =
  "a stage file sets no token, cost or time budget: the pipeline does, in its budget block (budget.stages.<stage id>: maxInputTokens, maxOutputTokens, maxCostUsd, maxSeconds)";
const NO_MODEL_SETTINGS =
  "a stage does not choose its model or its sampling: the run's model is picked with --model";

/**
 * Settings people expect a stage to have that stagechart has under another name, or not at all,
 * by their name without case, `-` or `_`: what to use instead.
 */
const SETTINGS: ReadonlyMap<string, string> = new Map([
  ...named(
    ["timeout", "timeoutms", "timeoutsec", "timeoutseconds", "deadline", "deadlinems"],
    NO_TIME_LIMIT,
  ),
  ...named(["timelimit", "maxduration", "maxdurationms", "duration", "maxseconds"], NO_TIME_LIMIT),
  ...named(
    ["maxtokens", "maxoutputtokens", "maxinputtokens", "tokenlimit", "tokens", "tokenbudget"],
    NO_BUDGET,
  ),
  ...named(["budget", "maxbudget", "cost", "maxcost", "maxcostusd", "costlimit"], NO_BUDGET),
  ...named(["model", "provider", "temperature", "topp", "topk"], NO_MODEL_SETTINGS),
  ...named(
    ["maxturns", "turns", "turnlimit", "maxiterations", "iterations", "maxsteps"],
    "use turnCap, the model turns an attempt may take",
  ),
  ...named(
    ["retries", "maxretries", "retry", "maxattempts", "attempts", "backoff"],
    "use retryPolicy: { maxAttempts, backoff }",
  ),
  ...named(["tools"], "use allowedTools, the tools the stage may call"),
  ...named(
    ["schema", "outputschema", "resultschema"],
    "use completionSchema, the schema of the completion tool's payload",
  ),
]);

function named(keys: readonly string[], advice: string): [string, string][] {
  return keys.map((key) => [key, advice]);
}

/**
 * What to say of a frontmatter key the contract does not know, or nothing when it looks like
 * the author's own metadata: a key close to a field (`turncap`, `completiontool`), or one that
 * names a setting stagechart has under another name or does not have (`timeoutMs`, `maxTokens`).
 */
export function unknownFieldAdvice(key: string, fields: Iterable<string>): string | undefined {
  const setting = SETTINGS.get(key.toLowerCase().replace(/[-_\s]/g, ""));
  if (setting !== undefined) return `unknown key "${key}" is ignored: ${setting}`;
  const near = closestName(key, fields);
  return near === undefined
    ? undefined
    : `unknown key "${key}" is ignored; did you mean "${near}"?`;
}
