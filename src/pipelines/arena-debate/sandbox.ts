import type {
  CodeStageFunction,
  JsonValue,
  StageContext,
  StageHooks,
  ToolCaller,
} from "../../definitions/contract.js";
import { definePipeline } from "../../definitions/define-pipeline.js";
import type { JsonSchema } from "../../definitions/json-schema.js";
import { NS } from "./memory.js";
import type { DebateRecord, PlanTask } from "./record.js";

/**
 * Seed 002's SandboxedExecution: run the plan's tasks one after another through Bash (the host's
 * sandbox, guards and security mode apply), validate the outcome, let the Critic repair a failed
 * plan (back to run-tasks) at most MAX_HEALS times, and otherwise undo what ran, newest first.
 */

/** Repairs tried before the run gives up and rolls back. */
export const MAX_HEALS = 2;
const TASK_TIMEOUT_MS = 120_000;
const TAIL_CHARS = 2000;

/** Where the execution stands: what ran, what is left, what failed. */
export interface Execution {
  completed: PlanTask[];
  pending: PlanTask[];
  failed?: { task: PlanTask; exitCode: number; stderrTail: string };
  /** Every command run, in order. */
  ran: { name: string; exitCode: number }[];
  heals: number;
  diagnosis?: string;
  outcome?: "succeeded" | "failed" | "rolled-back";
  rolledBack?: string[];
  rollbackFailures?: string[];
}

const executionOf = (ctx: StageContext): Execution => {
  const output = ctx.upstream[0]?.output as Execution | undefined;
  if (!output || !Array.isArray(output.pending)) throw new Error("no execution was handed on");
  return output;
};

type Ran = { ok: true; exitCode: number; stderr: string } | { ok: false; problem: string };

async function bash(callTool: ToolCaller, command: string): Promise<Ran> {
  const ran = await callTool("Bash", { command, timeoutMs: TASK_TIMEOUT_MS });
  if (!ran.ok) return { ok: false, problem: ran.error.message };
  const { exitCode, stderr } = ran.output as { exitCode: number; stderr: string };
  return { ok: true, exitCode, stderr };
}

/**
 * Runs the pending tasks in order until one exits non-zero. The plan comes from the run's
 * deliberation on entry, from the Critic's repair after a heal. A task the host refuses to run
 * fails the stage: no repair of the plan can change that.
 */
const runTasks: CodeStageFunction = async ({ ctx, callTool, memory }) => {
  const healed = ctx.upstream[0]?.stageId === "self-heal";
  const execution: Execution = healed
    ? { ...executionOf(ctx) }
    : {
        completed: [],
        pending: planOf(await memory.recall(NS.deliberations, ctx.workflowRunId)),
        ran: [],
        heals: 0,
      };
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
      return { verdict: "ok", output: json({ ...state, completed, pending, ran, failed }) };
    }
    completed.push(task);
  }
  return { verdict: "ok", output: json({ ...state, completed, pending, ran }) };
};

function planOf(deliberation: JsonValue | undefined): PlanTask[] {
  const tasks = (deliberation as DebateRecord | undefined)?.plan?.tasks;
  if (!Array.isArray(tasks)) throw new Error("the run's deliberation holds no plan to execute");
  return tasks;
}

/** Asserts the outcomes: succeeded when no task failed. */
const validate: CodeStageFunction = ({ ctx }) => {
  const execution = executionOf(ctx);
  const outcome = execution.failed ? "failed" : "succeeded";
  return {
    verdict: "ok",
    reason: execution.failed
      ? `task ${execution.failed.task.name} exited ${execution.failed.exitCode}`
      : `all ${execution.completed.length} tasks succeeded`,
    output: json({ ...execution, outcome }),
  };
};

interface Diagnosis {
  diagnosed: boolean;
  diagnosis: string;
  tasks?: PlanTask[];
}

/** The Critic's diagnosis: a repaired plan replaces the failed task and those after it. */
const selfHeal: StageHooks = {
  exit: ({ ctx, parsed }) => {
    const execution = executionOf(ctx);
    const { diagnosed, diagnosis, tasks } = parsed as Diagnosis;
    const repaired = diagnosed && (tasks?.length ?? 0) > 0;
    return json({
      ...execution,
      heals: execution.heals + 1,
      diagnosis,
      repaired,
      pending: repaired && tasks ? tasks : execution.pending,
    });
  },
};

/** Undoes the completed tasks, newest first; a rollback that fails is noted, the rest still run. */
const rollback: CodeStageFunction = async ({ ctx, callTool }) => {
  const execution = executionOf(ctx);
  const rolledBack: string[] = [];
  const rollbackFailures: string[] = [];
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
    output: json({ ...execution, outcome: "rolled-back", rolledBack, rollbackFailures }),
  };
};

const json = (value: Execution | (Execution & { repaired: boolean })): JsonValue =>
  value as unknown as JsonValue;

export function sandboxPipeline(context: JsonSchema) {
  return definePipeline({
    id: "arena-sandbox",
    description: "Seed 002's sandboxed execution: run, validate, heal, or roll back",
    context,
    entry: "run-tasks",
    stages: {
      "run-tasks": { code: runTasks },
      validate: { code: validate },
      "self-heal": { file: "../stages/arena-debate/self-heal.md" },
      rollback: { code: rollback },
    },
    next: {
      "run-tasks": "validate",
      validate: [
        { when: { path: "output.outcome", equals: "succeeded" }, to: "done" },
        { to: "self-heal" },
      ],
      "self-heal": [
        {
          when: {
            all: [
              { path: "output.repaired", equals: true },
              { visits: "self-heal", lte: MAX_HEALS },
            ],
          },
          to: "run-tasks",
        },
        { to: "rollback" },
      ],
      rollback: "done",
    },
    hooks: { "self-heal": selfHeal },
  });
}
