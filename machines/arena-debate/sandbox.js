/**
 * The arena debate's sandboxed execution: run the plan's tasks one after another through Bash (the host's
 * sandbox, guards and security mode apply), validate the outcome, let the Critic repair a failed
 * plan (back to run-tasks) as often as sandbox.yaml allows, and otherwise undo what ran, newest
 * first.
 */
/** @typedef {import("../../src/definitions/contract.js").CodeStageFunction} CodeStageFunction */
/** @typedef {import("../../src/definitions/contract.js").StageHooks} StageHooks */
/** @typedef {import("./record.js").PlanTask} PlanTask */
/**
 * Where the execution stands: what ran, what is left, what failed.
 * @typedef {object} Execution
 * @property {PlanTask[]} completed
 * @property {PlanTask[]} pending
 * @property {{ task: PlanTask; exitCode: number; stderrTail: string }} [failed]
 * @property {{ name: string; exitCode: number }[]} ran Every command run, in order.
 * @property {number} heals
 * @property {string} [diagnosis]
 * @property {"succeeded" | "failed" | "rolled-back"} [outcome]
 * @property {string[]} [rolledBack]
 * @property {string[]} [rollbackFailures]
 */

const TASK_TIMEOUT_MS = 120_000;
const TAIL_CHARS = 2000;
const executionOf = (ctx) => {
  const output = ctx.upstream[0]?.output;
  if (!output || !Array.isArray(output.pending)) throw new Error("no execution was handed on");
  return output;
};
async function bash(callTool, command) {
  const ran = await callTool("Bash", { command, timeoutMs: TASK_TIMEOUT_MS });
  if (!ran.ok) return { ok: false, problem: ran.error.message };
  const { exitCode, stderr } = ran.output;
  return { ok: true, exitCode, stderr };
}
/**
 * Runs the pending tasks in order until one exits non-zero. The plan comes from the decision the
 * sandbox stage is handed on entry, from the Critic's repair after a heal. A task the host
 * refuses to run fails the stage: no repair of the plan can change that.
 * @type {CodeStageFunction}
 */
export const runTasks = async ({ ctx, callTool }) => {
  const healed = ctx.upstream[0]?.stageId === "self-heal";
  const execution = healed
    ? { ...executionOf(ctx) }
    : { completed: [], pending: planOf(ctx.upstream[0]?.output), ran: [], heals: 0 };
  const { failed: _failed, ...state } = execution;
  const completed = [...state.completed];
  const ran = [...state.ran];
  const pending = [...state.pending];
  for (let task = pending.shift(); task; task = pending.shift()) {
    const result = await bash(callTool, task.run);
    if (!result.ok)
      return { verdict: "fail", reason: `task ${task.name} could not run: ${result.problem}` };
    ran.push({ name: task.name, exitCode: result.exitCode });
    if (result.exitCode !== 0) {
      const failed = {
        task,
        exitCode: result.exitCode,
        stderrTail: result.stderr.slice(-TAIL_CHARS),
      };
      return { verdict: "ok", output: { ...state, completed, pending, ran, failed } };
    }
    completed.push(task);
  }
  return { verdict: "ok", output: { ...state, completed, pending, ran } };
};
function planOf(decision) {
  const tasks = decision?.plan?.tasks;
  if (!Array.isArray(tasks)) throw new Error("the decision handed on holds no plan to execute");
  return tasks;
}
/**
 * Asserts the outcomes: succeeded when no task failed.
 * @type {CodeStageFunction}
 */
export const validate = ({ ctx }) => {
  const execution = executionOf(ctx);
  const outcome = execution.failed ? "failed" : "succeeded";
  return {
    verdict: "ok",
    reason: execution.failed
      ? `task ${execution.failed.task.name} exited ${execution.failed.exitCode}`
      : `all ${execution.completed.length} tasks succeeded`,
    output: { ...execution, outcome },
  };
};
/**
 * The Critic's diagnosis: a repaired plan replaces the failed task and those after it.
 * @type {NonNullable<StageHooks["exit"]>}
 */
export const healed = ({ ctx, parsed }) => {
  const execution = executionOf(ctx);
  const { diagnosed, diagnosis, tasks } = parsed;
  const repaired = diagnosed && (tasks?.length ?? 0) > 0;
  return {
    ...execution,
    heals: execution.heals + 1,
    diagnosis,
    repaired,
    pending: repaired && tasks ? tasks : execution.pending,
  };
};
/**
 * Undoes the completed tasks, newest first; a rollback that fails is noted, the rest still run.
 * @type {CodeStageFunction}
 */
export const rollback = async ({ ctx, callTool }) => {
  const execution = executionOf(ctx);
  const rolledBack = [];
  const rollbackFailures = [];
  for (const task of [...execution.completed].reverse()) {
    if (!task.rollback) continue;
    const result = await bash(callTool, task.rollback);
    if (result.ok && result.exitCode === 0) rolledBack.push(task.name);
    else
      rollbackFailures.push(
        `${task.name}: ${result.ok ? `exited ${result.exitCode}` : result.problem}`,
      );
  }
  return {
    verdict: "ok",
    reason: `rolled back ${rolledBack.join(", ") || "nothing"}`,
    output: { ...execution, outcome: "rolled-back", rolledBack, rollbackFailures },
  };
};
