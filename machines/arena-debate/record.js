/**
 * The debate record: what each stage of the debate hands the next (`output`), growing as it goes,
 * so every round sees the request, the memory context, the plan and every earlier argument.
 */

/** @typedef {import("./consensus.js").Argument} Argument */
/** @typedef {import("./consensus.js").Rating} Rating */
/** @typedef {import("./consensus.js").Role} Role */
/** @typedef {import("./consensus.js").Tally} Tally */
/** @typedef {import("../../src/definitions/contract.js").StageContext} StageContext */
/** @typedef {import("../../src/definitions/contract.js").StageHooks} StageHooks */

/**
 * A command of the plan, and the command that undoes it.
 * @typedef {{ name: string; run: string; rollback?: string }} PlanTask
 */
/**
 * A past debate; `similarity` (cosine of word counts) for the ones alike this one.
 * @typedef {{ traceId: string; task: string; decision: string; consensus: number; similarity?: number }} PastDebate
 */
/**
 * @typedef {object} DebateRecord
 * @property {string} traceId
 * @property {string} task
 * @property {{ recent: PastDebate[]; similar: PastDebate[]; ratings: Record<Role, Rating> }} memory
 * @property {unknown} [classification]
 * @property {{ summary: string; tasks: PlanTask[] }} [plan]
 * @property {Argument[]} arguments
 * @property {Tally[]} tallies The tally after each pass, then the final one.
 * @property {{ decision: "PROCEED" | "REJECT"; reason: string; consensus: number }} [ruling]
 * @property {{ stage: string; note: string }[]} steps Each stage's line of the trace, in order.
 */

/**
 * The record the stage before handed on; a stage placed after another stage always has one.
 * @param {StageContext} ctx
 * @returns {DebateRecord}
 */
export function recordOf(ctx) {
  const output = ctx.upstream[0]?.output;
  if (!output || typeof output !== "object" || !Array.isArray(output.arguments))
    throw new Error("the stage before handed on no debate record");
  return output;
}

/**
 * The record with one more line of trace.
 * @param {DebateRecord} record
 * @param {string} stage
 * @param {string} note
 * @returns {DebateRecord}
 */
export const noted = (record, stage, note) => ({
  ...record,
  steps: [...record.steps, { stage, note }],
});

/**
 * Debate passes that have run to the end: the Optimizer closes each.
 * @param {DebateRecord} record
 */
export const passesOf = (record) =>
  record.arguments.filter((arg) => arg.role === "optimizer").length;

/**
 * The Exit of a debate round (the stage id is the role): the record with the role's argument,
 * and Solution's revised plan.
 * @type {NonNullable<StageHooks["exit"]>}
 */
export const argued = ({ ctx, parsed, stage }) => {
  const record = recordOf(ctx);
  const { stance, confidence, argument, tasks } = parsed;
  const arg = { role: stage.id, pass: passesOf(record) + 1, stance, confidence, argument };
  const plan = tasks && record.plan ? { ...record.plan, tasks } : record.plan;
  return noted(
    { ...record, arguments: [...record.arguments, arg], ...(plan && { plan }) },
    stage.id,
    `pass ${arg.pass}: ${stance} (${confidence})${tasks ? ", plan revised" : ""}`,
  );
};

/** @type {NonNullable<StageHooks["exit"]>} The Exit of classify: its completion is the record's classification. */
export const classified = ({ ctx, parsed, stage }) =>
  noted({ ...recordOf(ctx), classification: parsed }, stage.id, `category ${parsed.category}`);

/** @type {NonNullable<StageHooks["exit"]>} The Exit of plan: its completion is the record's plan. */
export const planned = ({ ctx, parsed, stage }) =>
  noted({ ...recordOf(ctx), plan: parsed }, stage.id, `${parsed.tasks.length} tasks`);
