import { randomUUID } from "node:crypto";
import { anotherPass, decide, round, settingsOf, tally } from "./consensus.js";
import { NS, pastDebates, ratingsBefore, storeDebate } from "./memory.js";
import { noted, passesOf, recordOf } from "./record.js";

/**
 * The code stages machines/arena-debate.yaml names: the identity check, loading the memory, the
 * consensus tally between passes, the aggregation, the decision, storing the memory and the audit.
 */

/** @typedef {import("../../src/definitions/contract.js").CodeStageFunction} CodeStageFunction */

const DEFAULT_LOCKS = { project: "stagechart", database: "arena" };
/**
 * IdentityGuard: the workspace must match every lock, or the run halts here.
 * @type {CodeStageFunction}
 */
export const verifyIdentity = ({ ctx }) => {
  const locks = ctx.locks ?? DEFAULT_LOCKS;
  const workspace = ctx.workspace ?? locks;
  const mismatched = ["project", "database"].filter((lock) => workspace[lock] !== locks[lock]);
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
/**
 * LoadingContext: past ratings and debates, the most alike first; the run's trace id.
 * @type {CodeStageFunction}
 */
export const loadContext = async ({ ctx, memory }) => {
  const task = String(ctx.task);
  const past = await pastDebates(memory, task);
  const record = {
    traceId: `trace-${randomUUID()}`,
    task,
    memory: { ...past, ratings: await ratingsBefore(memory, ctx.workflowRunId) },
    arguments: [],
    tallies: [],
    steps: [{ stage: "verify-identity", note: "workspace matches its locks" }],
  };
  return {
    verdict: "ok",
    output: noted(
      record,
      "load-context",
      `${past.recent.length} recent, ${past.similar.length} similar debates`,
    ),
  };
};
/**
 * Multi_Pass_Check: tallies the pass; back to Solution while consensus is low and passes remain.
 * @type {CodeStageFunction}
 */
export const multiPassCheck = ({ ctx }) => {
  const record = recordOf(ctx);
  const settings = settingsOf(ctx);
  const result = tally(record.arguments, record.memory.ratings, settings);
  const passes = passesOf(record);
  const next = anotherPass(result, passes, settings) ? "solution" : "aggregate";
  const note = `pass ${passes}: consensus ${round(result.consensus)}${result.veto ? ", vetoed" : ""} → ${next}`;
  return {
    verdict: "ok",
    output: {
      ...noted({ ...record, tallies: [...record.tallies, result] }, "multi-pass-check", note),
      next,
    },
  };
};
/**
 * The aggregation engine: the weighted consensus over each role's latest argument.
 * @type {CodeStageFunction}
 */
export const aggregate = ({ ctx }) => {
  const record = recordOf(ctx);
  const result = tally(record.arguments, record.memory.ratings, settingsOf(ctx));
  const note = `consensus ${round(result.consensus)} (pro ${round(result.pro)}, contra ${round(result.contra)}), ${result.conflicts.length} conflicts`;
  return {
    verdict: "ok",
    output: noted({ ...record, tallies: [...record.tallies, result] }, "aggregate", note),
  };
};
/**
 * ResolvingDecision: PROCEED or REJECT, handed on (the sandbox executes its plan). The
 * deliberation is also kept in memory under the run's id, where store-memory reads it after the
 * sandbox, whose output is the execution.
 * @type {CodeStageFunction}
 */
export const resolveDecision = async ({ ctx, memory }) => {
  const record = recordOf(ctx);
  const last = record.tallies.at(-1);
  if (!last) return { verdict: "fail", reason: "nothing was tallied" };
  const ruling = { ...decide(last, settingsOf(ctx)), consensus: last.consensus };
  const decided = noted({ ...record, ruling }, "decide", `${ruling.decision}: ${ruling.reason}`);
  await memory.remember(NS.deliberations, ctx.workflowRunId, decided);
  return { verdict: "ok", reason: ruling.reason, output: decided };
};
/**
 * StoringMemory: the debate, and each participant's rating, matches and successes.
 * @type {CodeStageFunction}
 */
export const storeMemory = async ({ ctx, memory }) => {
  const handed = ctx.upstream[0];
  const execution = handed?.stageId === "sandbox" ? handed.output : undefined;
  const record = execution
    ? await memory.recall(NS.deliberations, ctx.workflowRunId)
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
  return { verdict: "ok", output: { ...stored, ratings } };
};
/**
 * Auditing: the whole trace under its id; the run's output is the decision and that id.
 * @type {CodeStageFunction}
 */
export const audit = async ({ ctx, memory }) => {
  const record = recordOf(ctx);
  const trace = noted(record, "audit", `trace ${record.traceId} written`);
  await memory.remember(NS.traces, record.traceId, { runId: ctx.workflowRunId, ...trace });
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
