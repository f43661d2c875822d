import * as z from "../zod.js";
import type { GuardFunction, StageHooks, TransitionHook } from "./contract.js";
import type { Condition, JoinPolicy, Rule, Transition } from "./pipeline-types.js";
import { byKind, fn, mapping, present, text } from "./schema-parts.js";
import { KEBAB_CASE } from "./stage-schema.js";
import { grantTimeoutSchema } from "./wait-timeout.js";

/**
 * The shapes of a pipeline, shared by YAML files and `definePipeline`: each
 * field and entry is parsed on its own so one mistake does not hide the others. Messages read
 * after the path of the offending key (`next.review[1].when: …`).
 */

export type PipelineForm = "yaml" | "ts";

/** `Tool` or `Tool(pattern)`, as the grant policy reads them (`*` globs allowed in both parts). */
/** `Tool` or `Tool(pattern)`: the tool name, and the pattern its calls' gist must match. */
export const TOOL_RULE = /^([^()\s]+)(?:\((.*)\))?$/s;

/**
 * A dotted path over what a rule decides on: `verdict`, `output.approved`, `ctx.task`,
 * `error.code`.
 */
const FACT_PATH = /^(?:verdict|output|parsed|ctx|error)(?:\.[^.\s]+)*$/;

const COMPARE_OPS = ["equals", "notEquals", "lt", "lte", "gt", "gte", "in", "exists"] as const;
const VISIT_OPS = ["equals", "lt", "lte", "gt", "gte"] as const;
const CONDITION_KINDS = ["path", "visits", "all", "any", "not", "guard"] as const;
const JOIN_POLICIES = ["fail-fast", "all-settled", "any"] as const;

const stageName = text("a stage id");
const target = text("a stage id, done, fail or cancel");
const ordered = z.union([z.number(), z.string()], { error: "compares with a number or a string" });

const rawCondition = mapping("a condition", {
  path: z.optional(
    z.string({ error: "must be a dotted path" }).check(
      z.regex(FACT_PATH, {
        error: "must be a dotted path under verdict, output, parsed, ctx or error",
      }),
    ),
  ),
  equals: z.optional(z.unknown()),
  notEquals: z.optional(z.unknown()),
  lt: z.optional(ordered),
  lte: z.optional(ordered),
  gt: z.optional(ordered),
  gte: z.optional(ordered),
  in: z.optional(z.array(z.unknown(), { error: "takes a list of values" })),
  exists: z.optional(z.boolean({ error: "takes true or false" })),
  visits: z.optional(stageName),
  get all() {
    return conditions();
  },
  get any() {
    return conditions();
  },
  get not() {
    return z.optional(conditionSchema);
  },
  guard: z.optional(text("a guard name")),
});

function conditions() {
  return z.optional(
    z.array(conditionSchema, { error: "takes a list of conditions" }).check(z.minLength(1)),
  );
}

type RawCondition = z.output<typeof rawCondition>;

function checkCondition(raw: RawCondition, ctx: z.core.$RefinementCtx<RawCondition>): void {
  const issue = (path: string[], message: string) =>
    ctx.addIssue({ code: "custom", path, message });
  const [kind, ...extra] = CONDITION_KINDS.filter((key) => present(raw, key));
  if (kind === undefined) {
    issue([], `a condition needs one of ${CONDITION_KINDS.join(", ")}`);
    return;
  }
  for (const key of extra) {
    issue([key], `a condition has one of ${CONDITION_KINDS.join(", ")}; this one also has ${kind}`);
  }
  const [op, ...moreOps] = COMPARE_OPS.filter((key) => present(raw, key));
  if (kind !== "path" && kind !== "visits") {
    if (op !== undefined)
      issue([op], `${op} compares a path or visits; this condition has ${kind}`);
    return;
  }
  const allowed: readonly string[] = kind === "path" ? COMPARE_OPS : VISIT_OPS;
  if (op === undefined) issue([kind], `${kind} needs one operator: ${allowed.join(", ")}`);
  for (const key of moreOps) issue([key], `a condition has one operator; this one also has ${op}`);
  if (kind === "visits" && op !== undefined) {
    const count = raw[op];
    if (!allowed.includes(op)) issue([op], `visits compares with ${allowed.join(", ")}`);
    else if (!Number.isInteger(count) || (count as number) < 0) {
      issue([op], "a visit count is a whole number, 0 or more");
    }
  }
}

function toCondition(raw: RawCondition): Condition {
  if (raw.all !== undefined) return { all: raw.all };
  if (raw.any !== undefined) return { any: raw.any };
  if (raw.not !== undefined) return { not: raw.not };
  if (raw.guard !== undefined) return { guard: raw.guard };
  if (raw.visits !== undefined) {
    const op = VISIT_OPS.find((key) => present(raw, key)) ?? "equals";
    return { visits: raw.visits, op, value: raw[op] as number };
  }
  const op = COMPARE_OPS.find((key) => present(raw, key)) ?? "exists";
  return { path: raw.path ?? "", op, value: raw[op] };
}

const conditionSchema: z.ZodMiniType<Condition> = z.lazy(() =>
  z.pipe(rawCondition.check(z.superRefine(checkCondition)), z.transform(toCondition)),
);

const rule: z.ZodMiniType<Rule> = mapping("a rule", {
  when: z.optional(conditionSchema),
  to: target,
});

const joinPolicy = byKind<JoinPolicy>(
  {
    string: z.pipe(
      z.enum(JOIN_POLICIES, { error: `must be ${JOIN_POLICIES.join(", ")} or { quorum: k }` }),
      z.transform((kind) => ({ kind })),
    ),
    object: z.pipe(
      mapping("{ quorum: k }", { quorum: z.int({ error: "must be a whole number of siblings" }) }),
      z.transform(({ quorum }) => ({ kind: "quorum" as const, k: quorum })),
    ),
  },
  `${JOIN_POLICIES.join(", ")} or { quorum: k }`,
);

const parallel = z.pipe(
  mapping("a parallel group", {
    parallel: z.array(stageName, { error: "must be a list of stage ids" }),
    join: text("a stage id or done"),
    policy: z.optional(joinPolicy),
    maxConcurrency: z.optional(
      z.int({ error: "must be a whole number" }).check(z.gte(1, { error: "must be at least 1" })),
    ),
  }),
  z.transform(
    ({ parallel: siblings, join, policy, maxConcurrency }): Transition => ({
      kind: "parallel",
      siblings,
      join,
      policy: policy ?? { kind: "fail-fast" },
      ...(maxConcurrency !== undefined && { maxConcurrency }),
    }),
  ),
);

/** Where a map group's list is: a dotted path under the fan-out stage's output, parsed, or ctx. */
export const LIST_PATH = /^(?:output|parsed|ctx)(?:\.[^.\s]+)+$/;

const mapGroup = z.pipe(
  mapping("a map group", {
    map: mapping("a map", {
      over: z.string({ error: "must be a dotted path" }).check(
        z.regex(LIST_PATH, {
          error: "must be a dotted path under output, parsed or ctx, e.g. output.files",
        }),
      ),
      stage: stageName,
      as: z.optional(text("a ctx name for the item")),
      maxItems: z.optional(
        z.int({ error: "must be a whole number" }).check(z.gte(1, { error: "must be at least 1" })),
      ),
    }),
    join: text("a stage id or done"),
    policy: z.optional(joinPolicy),
    maxConcurrency: z.optional(
      z.int({ error: "must be a whole number" }).check(z.gte(1, { error: "must be at least 1" })),
    ),
  }),
  z.transform(
    ({ map, join, policy, maxConcurrency }): Transition => ({
      kind: "map",
      over: map.over,
      stage: map.stage,
      ...(map.as !== undefined && { as: map.as }),
      join,
      policy: policy ?? { kind: "fail-fast" },
      ...(maxConcurrency !== undefined && { maxConcurrency }),
      ...(map.maxItems !== undefined && { maxItems: map.maxItems }),
    }),
  ),
);

/** A mapping is a map group when it has `map`, a parallel group otherwise. */
const group = z.transform((value: Record<string, unknown>, ctx): Transition => {
  const parsed = ("map" in value ? mapGroup : parallel).safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    ctx.issues.push({ ...issue, input: value } as (typeof ctx.issues)[number]);
  }
  return z.NEVER;
});

export const transitionSchema = byKind<Transition>(
  {
    string: z.pipe(
      target,
      z.transform((to): Transition => ({ kind: "rules", rules: [{ to }] })),
    ),
    array: z.pipe(
      z.array(rule).check(z.minLength(1, { error: "needs at least one rule" })),
      z.transform((rules): Transition => ({ kind: "rules", rules })),
    ),
    object: group,
  },
  "a target (a stage id, done or fail), a list of rules, a parallel group or a map group",
);

const toolRule = z
  .string({ error: "must be a tool rule" })
  .check(z.regex(TOOL_RULE, { error: 'must be Tool or Tool(pattern), e.g. "Bash(git status)"' }));

export const grantsSchema = mapping("grants", {
  approve: z.optional(z.array(toolRule, { error: "must be a list of tool rules" })),
  deny: z.optional(z.array(toolRule, { error: "must be a list of tool rules" })),
  timeout: z.optional(grantTimeoutSchema),
});

export const descriptionSchema = z.string({ error: "must be a string" });
export const stageIdSchema = stageName;

export const pipelineIdSchema = z
  .string({ error: "must be a string" })
  .check(
    z.regex(KEBAB_CASE, { error: "must be kebab-case: lowercase words joined by single hyphens" }),
  );

export const jsonSchemaObject = z.record(z.string(), z.unknown(), {
  error: "must be a JSON Schema object",
});

export const stagesSchema = z.record(z.string(), z.unknown(), {
  error: "must map stage ids to stage entries",
});

export const nextSchema = z.record(z.string(), z.unknown(), {
  error: "must map stage ids to transitions",
});

export const guardsSchema = z.record(z.string(), fn<GuardFunction>("a guard function"), {
  error: "must map guard names to functions",
});

export const OVERRIDE_REACH = ["reachable", "adjacent"] as const;
export const overrideSchema = z.enum(OVERRIDE_REACH, {
  error:
    'must be "reachable" (any stage the transitions reach) or "adjacent" (a stage a rule of the current one leads to)',
});

export const reopenableSchema = z.boolean({
  error: "must be true (redo reopens a run that ended done) or false",
});

export const transitionHookSchema = fn<TransitionHook>("a function");

const tokens = z.optional(
  z
    .int({ error: "must be a whole number of tokens" })
    .check(z.gte(1, { error: "must be at least 1" })),
);
const positive = (what: string) =>
  z.optional(
    z.number({ error: `must be a number of ${what}` }).check(z.gt(0, { error: "must be above 0" })),
  );

/** A budget: at least one of its limits. */
export const budgetSchema = z
  .strictObject(
    {
      maxInputTokens: tokens,
      maxOutputTokens: tokens,
      maxCostUsd: positive("US dollars"),
      maxSeconds: positive("seconds"),
    },
    { error: "must be { maxInputTokens, maxOutputTokens, maxCostUsd, maxSeconds }" },
  )
  .check(
    z.refine((budget) => Object.keys(budget).length > 0, {
      error: "must set at least one of maxInputTokens, maxOutputTokens, maxCostUsd, maxSeconds",
    }),
  );

export const pipelineBudgetSchema = z.strictObject(
  {
    run: z.optional(budgetSchema),
    stages: z.optional(
      z.record(z.string(), budgetSchema, { error: "must map stage ids to budgets" }),
    ),
  },
  { error: "must be { run: <budget>, stages: { <stage id>: <budget> } }" },
);

export const hooksSchema = z.record(
  z.string(),
  mapping("stage hooks", {
    gate: z.optional(fn<NonNullable<StageHooks["gate"]>>("a gate function")),
    assert: z.optional(fn<NonNullable<StageHooks["assert"]>>("an assert function")),
    exit: z.optional(fn<NonNullable<StageHooks["exit"]>>("an exit function")),
    refuseCompletion: z.optional(
      fn<NonNullable<StageHooks["refuseCompletion"]>>("a refuseCompletion function"),
    ),
  }),
  { error: "must map stage ids to { gate, assert, exit, refuseCompletion }" },
);
