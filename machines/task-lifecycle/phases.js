import { writeDecision } from "./accept-decision.js";
import {
  codegenOutcome,
  planningOutcome,
  planReviewOutcome,
  revertOutcome,
  reviewOutcome,
} from "./artifacts.js";
import { keepPlanningVersion } from "./planning-versions.js";
import { taskState, writeTaskState } from "./state-file.js";

/**
 * The code machines/task-lifecycle.yaml names: the Assert and Exit of its LLM phases (each reads
 * the phase's artifacts under `task/`), its test phase, and what it writes after every transition.
 */

/** @typedef {import("../../src/definitions/contract.js").StageHooks} StageHooks */
/** @typedef {import("../../src/definitions/contract.js").CodeStageFunction} CodeStageFunction */
/** @typedef {import("../../src/definitions/contract.js").TransitionHook} TransitionHook */

/** The task lifecycle's phases, in the order `task/state.json` lists them. */
export const PHASES = ["planning", "plan-review", "codegen", "review", "test", "accept", "revert"];

const DEFAULT_TEST_COMMAND = "npm test";
const TAIL_CHARS = 4000;

/** What each LLM phase's artifacts say: where it goes next, or why it cannot advance yet. */
const OUTCOMES = {
  planning: planningOutcome,
  "plan-review": planReviewOutcome,
  codegen: (root, parsed) => codegenOutcome(root, parsed?.outcome),
  review: reviewOutcome,
  revert: revertOutcome,
};

const outcomeOf = (stageId, root, parsed) => {
  const decide = OUTCOMES[stageId];
  if (!decide) throw new Error(`${stageId} is not a phase whose artifacts decide where it goes`);
  return decide(root, parsed);
};

/**
 * Assert: the phase is held (a retry whose reason names the file) until its artifacts are there
 * and well-formed.
 * @type {NonNullable<StageHooks["assert"]>}
 */
export const artifactsWritten = ({ root, parsed, capHit, stage }) => {
  if (capHit || parsed === undefined)
    return {
      verdict: "retry",
      reason: `no valid ${stage.completionTool} call within ${stage.turnCap} turns`,
    };
  const outcome = outcomeOf(stage.id, root, parsed);
  return "problem" in outcome
    ? {
        verdict: "retry",
        reason: `${outcome.problem}; write it, then call ${stage.completionTool} again`,
      }
    : { verdict: "ok" };
};

/**
 * Exit: where the artifacts send the task (`output.next`), and why.
 * @type {NonNullable<StageHooks["exit"]>}
 */
export const nextPhase = ({ root, parsed, stage }) => {
  const outcome = outcomeOf(stage.id, root, parsed);
  return "problem" in outcome ? undefined : { next: outcome.next, reason: outcome.reason };
};

/**
 * The test phase: `ctx.testCommand` (default `npm test`) through Bash; a pass goes on to accept,
 * a failure back to codegen.
 * @type {CodeStageFunction}
 */
export const runTests = async ({ ctx, callTool }) => {
  const command = typeof ctx.testCommand === "string" ? ctx.testCommand : DEFAULT_TEST_COMMAND;
  const ran = await callTool("Bash", { command, timeoutMs: 600_000 });
  if (!ran.ok)
    return { verdict: "fail", reason: `\`${command}\` could not run: ${ran.error.message}` };
  const { exitCode, stdout, stderr } = ran.output;
  return {
    verdict: "ok",
    output: {
      next: exitCode === 0 ? "accept" : "codegen",
      reason: exitCode === 0 ? `\`${command}\` passed` : `\`${command}\` exited ${exitCode}`,
      exitCode,
      stdoutTail: stdout.slice(-TAIL_CHARS),
      stderrTail: stderr.slice(-TAIL_CHARS),
    },
  };
};

/**
 * After every transition: keep the planning round being replaced, record accept's decision, and
 * write `task/state.json`.
 * @type {TransitionHook}
 */
export const recordTransition = (notice) => {
  keepPlanningVersion(notice);
  writeDecision(notice);
  writeTaskState(notice.root, taskState(notice, PHASES));
};
