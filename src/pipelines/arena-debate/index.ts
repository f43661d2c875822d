import { randomUUID } from "node:crypto";
import type { CodeStageFunction } from "../../definitions/contract.js";
import { definePipeline } from "../../definitions/define-pipeline.js";
import type { JsonSchema } from "../../definitions/json-schema.js";
import { anotherPass, decide, round, settingsOf, tally } from "./consensus.js";
import { NS, pastDebates, ratingsBefore, storeDebate } from "./memory.js";
import {
  asJson,
  type DebateRecord,
  round as debateRound,
  into,
  noted,
  passesOf,
  recordOf,
} from "./record.js";
import { type Execution, sandboxPipeline } from "./sandbox.js";

/**
 * Seed 002's arena debate: verify the workspace identity, load what past runs left (ratings,
 * debates), classify, plan, debate in five rounds (Analyst → Solution → Critic → Security →
 * Optimizer) and again from Solution while consensus is low, aggregate with Elo-weighted votes,
 * decide (a Security veto or low consensus rejects), execute in a sandbox sub-pipeline, then store
 * the memory and write the trace, after a rejection too. It is TypeScript because the identity
 * check, the consensus maths, the execution and the memory are code stages.
 */

const lockSchema: JsonSchema = {
  type: "object",
  required: ["project", "database"],
  additionalProperties: false,
  properties: { project: { type: "string" }, database: { type: "string" } },
};
const share: JsonSchema = { type: "number", minimum: 0, maximum: 1 };

const CONTEXT: JsonSchema = {
  type: "object",
  required: ["task"],
  properties: {
    task: { type: "string", minLength: 1 },
    /** The workspace locks the pipeline is configured with… */
    locks: lockSchema,
    /** …and the workspace the request runs against (the locks when not given). */
    workspace: lockSchema,
    consensusTarget: share,
    maxPasses: { type: "integer", minimum: 1 },
    vetoConfidence: share,
    minConsensus: share,
  },
};

export const DEFAULT_LOCKS = { project: "stagechart", database: "arena" } as const;

type Locks = { project: string; database: string };

/** IdentityGuard: the workspace must match every lock, or the run halts here. */
const verifyIdentity: CodeStageFunction = ({ ctx }) => {
  const locks = (ctx.locks as Locks | undefined) ?? DEFAULT_LOCKS;
  const workspace = (ctx.workspace as Locks | undefined) ?? locks;
  const mismatched = (["project", "database"] as const).filter(
    (lock) => workspace[lock] !== locks[lock],
  );
  if (mismatched.length > 0)
    return {
      verdict: "fail",
      reason: `identity mismatch: ${mismatched
        .map((lock) => `${lock} "${workspace[lock]}" is not the locked "${locks[lock]}"`)
        .join(", ")}`,
    };
  return {
    verdict: "ok",
    output: { verified: true, project: locks.project, database: locks.database },
  };
};

/** LoadingContext: past ratings and debates, the most alike first; the run's trace id. */
const loadContext: CodeStageFunction = async ({ ctx, memory }) => {
  const task = String(ctx.task);
  const past = await pastDebates(memory, task);
  const record: DebateRecord = {
    traceId: `trace-${randomUUID()}`,
    task,
    memory: { ...past, ratings: await ratingsBefore(memory, ctx.workflowRunId) },
    arguments: [],
    tallies: [],
    steps: [{ stage: "verify-identity", note: "workspace matches its locks" }],
  };
  return {
    verdict: "ok",
    output: asJson(
      noted(
        record,
        "load-context",
        `${past.recent.length} recent, ${past.similar.length} similar debates`,
      ),
    ),
  };
};

/** Multi_Pass_Check: tallies the pass; back to Solution while consensus is low and passes remain. */
const multiPassCheck: CodeStageFunction = ({ ctx }) => {
  const record = recordOf(ctx);
  const settings = settingsOf(ctx);
  const result = tally(record.arguments, record.memory.ratings, settings);
  const passes = passesOf(record);
  const next = anotherPass(result, passes, settings) ? "solution" : "aggregate";
  const note = `pass ${passes}: consensus ${round(result.consensus)}${result.veto ? ", vetoed" : ""} → ${next}`;
  return {
    verdict: "ok",
    output: asJson({
      ...noted({ ...record, tallies: [...record.tallies, result] }, "multi-pass-check", note),
      next,
    }),
  };
};

/** The aggregation engine: the weighted consensus over each role's latest argument. */
const aggregate: CodeStageFunction = ({ ctx }) => {
  const record = recordOf(ctx);
  const result = tally(record.arguments, record.memory.ratings, settingsOf(ctx));
  const note = `consensus ${round(result.consensus)} (pro ${round(result.pro)}, contra ${round(result.contra)}), ${result.conflicts.length} conflicts`;
  return {
    verdict: "ok",
    output: asJson(noted({ ...record, tallies: [...record.tallies, result] }, "aggregate", note)),
  };
};

/**
 * ResolvingDecision: PROCEED or REJECT. The deliberation is kept in memory under the run's id,
 * where the sandbox (which starts from ctx alone) and the stages after it read it.
 */
const resolveDecision: CodeStageFunction = async ({ ctx, memory }) => {
  const record = recordOf(ctx);
  const last = record.tallies.at(-1);
  if (!last) return { verdict: "fail", reason: "nothing was tallied" };
  const ruling = { ...decide(last, settingsOf(ctx)), consensus: last.consensus };
  const decided = noted({ ...record, ruling }, "decide", `${ruling.decision}: ${ruling.reason}`);
  await memory.remember(NS.deliberations, ctx.workflowRunId, asJson(decided));
  return { verdict: "ok", reason: ruling.reason, output: asJson(decided) };
};

/** StoringMemory: the debate, and each participant's rating, matches and successes. */
const storeMemory: CodeStageFunction = async ({ ctx, memory }) => {
  const handed = ctx.upstream[0];
  const execution =
    handed?.stageId === "sandbox" ? (handed.output as unknown as Execution) : undefined;
  const record = execution
    ? ((await memory.recall(NS.deliberations, ctx.workflowRunId)) as unknown as DebateRecord)
    : recordOf(ctx);
  const ratings = await storeDebate(
    memory,
    ctx.workflowRunId,
    record,
    execution?.outcome === "succeeded",
  );
  const stored = noted(
    { ...record, ...(execution && { execution }) },
    "store-memory",
    `debate ${record.traceId} and ${Object.keys(ratings).length} ratings stored`,
  );
  return { verdict: "ok", output: asJson({ ...stored, ratings }) };
};

/** Auditing: the whole trace under its id; the run's output is the decision and that id. */
const audit: CodeStageFunction = async ({ ctx, memory }) => {
  const record = recordOf(ctx) as DebateRecord & { execution?: Execution };
  const trace = noted(record, "audit", `trace ${record.traceId} written`);
  await memory.remember(NS.traces, record.traceId, asJson({ runId: ctx.workflowRunId, ...trace }));
  const ruling = record.ruling;
  const decision = ruling?.decision ?? "REJECT";
  const execution = record.execution?.outcome ? `, execution ${record.execution.outcome}` : "";
  return {
    verdict: "ok",
    reason: `${decision}${execution}; trace ${record.traceId}`,
    output: {
      decision,
      traceId: record.traceId,
      consensus: round(ruling?.consensus ?? 0),
      reason: ruling?.reason ?? "no decision was reached",
      ...(record.execution?.outcome && { execution: record.execution.outcome }),
    },
  };
};

export const ARENA_STAGES = "../stages/arena-debate";

export const arenaDebate = definePipeline({
  id: "arena-debate",
  description:
    "Seed 002: verify identity, load memory, classify, plan, debate in five rounds, aggregate, decide, execute in a sandbox, store memory, audit",
  context: CONTEXT,
  entry: "verify-identity",
  stages: {
    "verify-identity": { code: verifyIdentity },
    "load-context": { code: loadContext },
    classify: { file: `${ARENA_STAGES}/classify.md` },
    plan: { file: `${ARENA_STAGES}/plan.md` },
    analyst: { file: `${ARENA_STAGES}/analyst.md` },
    solution: { file: `${ARENA_STAGES}/solution.md` },
    critic: { file: `${ARENA_STAGES}/critic.md` },
    security: { file: `${ARENA_STAGES}/security.md` },
    optimizer: { file: `${ARENA_STAGES}/optimizer.md` },
    "multi-pass-check": { code: multiPassCheck },
    aggregate: { code: aggregate },
    decide: { code: resolveDecision },
    sandbox: { pipeline: sandboxPipeline(CONTEXT) },
    "store-memory": { code: storeMemory },
    audit: { code: audit },
  },
  next: {
    "verify-identity": "load-context",
    "load-context": "classify",
    classify: "plan",
    plan: "analyst",
    analyst: "solution",
    solution: "critic",
    critic: "security",
    security: "optimizer",
    optimizer: "multi-pass-check",
    "multi-pass-check": [
      { when: { path: "output.next", equals: "solution" }, to: "solution" },
      { to: "aggregate" },
    ],
    aggregate: "decide",
    decide: [
      { when: { path: "output.ruling.decision", equals: "PROCEED" }, to: "sandbox" },
      { to: "store-memory" },
    ],
    sandbox: "store-memory",
    "store-memory": "audit",
    audit: "done",
  },
  hooks: {
    classify: into(
      "classification",
      (parsed: { category: string }) => `category ${parsed.category}`,
    ),
    plan: into("plan", (parsed: { tasks: unknown[] }) => `${parsed.tasks.length} tasks`),
    analyst: debateRound("analyst"),
    solution: debateRound("solution"),
    critic: debateRound("critic"),
    security: debateRound("security"),
    optimizer: debateRound("optimizer"),
  },
});
