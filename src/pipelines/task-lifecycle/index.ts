import type { StageHooks } from "../../definitions/contract.js";
import { definePipeline } from "../../definitions/define-pipeline.js";
import type { RuleSpec } from "../../definitions/pipeline-spec.js";
import { ACCEPT_DECISIONS, acceptQuestion, writeDecision } from "./accept-decision.js";
import {
  codegenOutcome,
  type Outcome,
  type Phase,
  planningOutcome,
  planReviewOutcome,
  revertOutcome,
  reviewOutcome,
} from "./artifacts.js";
import { keepPlanningVersion } from "./planning-versions.js";
import { taskState, writeTaskState } from "./state-file.js";

/**
 * Seed 004's task lifecycle: planning → plan-review → codegen → review → test → accept → done,
 * with the seed's regressions and revert, and nothing else. Accept asks a person for the
 * decision (an ask stage), recorded in `task/accept/decision.json`. Each LLM phase writes artifacts under
 * `task/`; its Assert holds the phase until they are there and well-formed (a retry whose reason
 * names the file), and its Exit reads them to say where the task goes (`output.next`). The rules
 * below follow only the seed's table. It is TypeScript because those checks read the disk, and
 * the test phase runs a command chosen per run (`ctx.testCommand`, default `npm test`).
 */

export const PHASES = [
  "planning",
  "plan-review",
  "codegen",
  "review",
  "test",
  "accept",
  "revert",
] as const satisfies readonly Phase[];

/** No phase is entered more than this many times in one run: a model that keeps looping fails it. */
export const MAX_ROUNDS = 5;

const DEFAULT_TEST_COMMAND = "npm test";
const TAIL_CHARS = 4000;

/** A transition of the seed's table, taken when the phase's output says so. */
const to = (target: Phase): RuleSpec<Phase, never> => ({
  when: {
    all: [
      { path: "output.next", equals: target },
      { visits: target, lt: MAX_ROUNDS },
    ],
  },
  to: target,
});
const toDone: RuleSpec<Phase, never> = {
  when: { path: "output.next", equals: "done" },
  to: "done",
};
/** Accept's transitions: where the person's decision sends the task (seed 004 §3.10–3.11). */
const decided = (decision: keyof typeof ACCEPT_DECISIONS): RuleSpec<Phase, never> => {
  const target = ACCEPT_DECISIONS[decision];
  const chosen = { path: "output.decision", equals: decision };
  return target === "done"
    ? { when: chosen, to: "done" }
    : { when: { all: [chosen, { visits: target, lt: MAX_ROUNDS }] }, to: target };
};

/** Assert and Exit of an LLM phase whose artifacts `decide` where it goes. */
function artifactChecked(decide: (root: string, parsed: unknown) => Outcome): StageHooks {
  return {
    assert: ({ root, parsed, capHit, stage }) => {
      if (capHit || parsed === undefined)
        return {
          verdict: "retry",
          reason: `no valid ${stage.completionTool} call within ${stage.turnCap} turns`,
        };
      const outcome = decide(root, parsed);
      return "problem" in outcome
        ? {
            verdict: "retry",
            reason: `${outcome.problem}; write it, then call ${stage.completionTool} again`,
          }
        : { verdict: "ok" };
    },
    exit: ({ root, parsed }) => {
      const outcome = decide(root, parsed);
      return "problem" in outcome ? undefined : { next: outcome.next, reason: outcome.reason };
    },
  };
}

const signalOf = (parsed: unknown) => (parsed as { outcome?: unknown } | undefined)?.outcome;

export const taskLifecycle = definePipeline({
  id: "task-lifecycle",
  description:
    "Seed 004: plan, review the plan, generate code, review it, test it, accept or revert",
  context: {
    type: "object",
    required: ["task"],
    properties: {
      task: { type: "string", minLength: 1 },
      testCommand: { type: "string", minLength: 1 },
    },
  },
  entry: "planning",
  stages: {
    planning: { file: "../stages/task-lifecycle/planning.md" },
    "plan-review": { file: "../stages/task-lifecycle/plan-review.md" },
    codegen: { file: "../stages/task-lifecycle/codegen.md" },
    review: { file: "../stages/task-lifecycle/review.md" },
    test: {
      code: async ({ ctx, callTool }) => {
        const command =
          typeof ctx.testCommand === "string" ? ctx.testCommand : DEFAULT_TEST_COMMAND;
        const ran = await callTool("Bash", { command, timeoutMs: 600_000 });
        if (!ran.ok)
          return { verdict: "fail", reason: `\`${command}\` could not run: ${ran.error.message}` };
        const { exitCode, stdout, stderr } = ran.output as {
          exitCode: number;
          stdout: string;
          stderr: string;
        };
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
      },
    },
    accept: { ask: acceptQuestion },
    revert: { file: "../stages/task-lifecycle/revert.md" },
  },
  next: {
    planning: [to("plan-review"), to("planning")],
    "plan-review": [to("codegen"), to("planning")],
    codegen: [to("review"), to("planning"), to("plan-review"), to("codegen")],
    review: [to("test"), to("codegen"), to("planning")],
    test: [to("accept"), to("codegen")],
    accept: [
      decided("accepted"),
      decided("changes-requested"),
      decided("needs-review"),
      decided("upstream-problem"),
      decided("revert"),
    ],
    revert: [toDone],
  },
  hooks: {
    planning: artifactChecked(planningOutcome),
    "plan-review": artifactChecked(planReviewOutcome),
    codegen: artifactChecked((root, parsed) => codegenOutcome(root, signalOf(parsed))),
    review: artifactChecked(reviewOutcome),
    revert: artifactChecked(revertOutcome),
  },
  // Seed 004 §5 and §7: a phase is never skipped, an override included.
  override: "adjacent",
  // Seed 004 §5.4: done is final until a redo reopens the task.
  reopenable: true,
  onTransition: (notice) => {
    keepPlanningVersion(notice);
    writeDecision(notice);
    writeTaskState(notice.root, taskState(notice, PHASES));
  },
});
