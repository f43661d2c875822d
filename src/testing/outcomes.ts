import { holds } from "../compiler/conditions.js";
import { refusalEntry } from "../compiler/stage-entries.js";
import type { ExitInput } from "../compiler/stage-services-port.js";
import type { JsonValue, StageResult, Verdict } from "../definitions/contract.js";
import {
  CANCEL,
  DONE,
  FAIL,
  type PipelineDefinition,
  type PipelineStage,
} from "../definitions/pipeline-types.js";
import { defaultExit } from "../runtime/stage-hooks.js";
import { missesUpstream } from "./inputs-refused.js";
import { describeRequirement, payloadFor, type Requirement } from "./payloads.js";
import { routeOf } from "./routes.js";
import {
  ANY_OBJECT,
  computesOutput,
  isOutputCondition,
  MAX_SPLIT_CONDITIONS,
  payloadConditions,
  splitsOf,
} from "./splits.js";

/** Calls a stage may be driven to ask for outside its envelope; none runs, since the run suspends. */
const GRANT_PROBES = [
  { tool: "Glob", args: { pattern: "**/*.md" } },
  { tool: "Read", args: { path: "README.md" } },
  { tool: "Write", args: { path: "stagechart-probe.txt", content: "probe" } },
  { tool: "Bash", args: { command: "git log -1" } },
];

/**
 * One way a stage can end that the transition rules can tell apart, and how to drive a real
 * stage into it:
 * - `complete`: one completion call with `payload` (an `ok` verdict);
 * - `cap-hit`: every attempt spends `turnCap` turns without a valid completion (a schema-breaking
 *   payload first, then prose), so the retries run out and the stage fails;
 * - `gate`: the stage's gate answers `defer` or `block`, and `resolutionPolicy` decides;
 * - `grant-suspended`: the stage asks for a tool outside its envelope and the run suspends;
 * - `code`: a code, command or sub-pipeline stage ends with the verdict (not forced by a script);
 * - `inputs-refused`: an upstream result fails the stage's `inputsSchema`, so Setup fails it;
 * - `answer`: an ask stage answered with a value its schema accepts, or never (it suspends);
 * - `budget-exceeded`: a stage under a budget (the run's or its own) replies with the tokens the
 *   budget allows, and its next model call is not made (`Cancellation/BudgetExceeded`);
 * - `timed-out`: nobody answers a wait with a deadline by then: an ask stage's timeout gives its
 *   default answer or fails the stage, and a grant request's fails it when the grants block's
 *   timeout says so (`Cancellation/WaitTimedOut`), driven by nobody answering (a path's run reads
 *   a clock that passes deadlines at once). A deny fallback is no outcome of its own: the stage
 *   goes on.
 */
export interface StageOutcome {
  stage: string;
  /** `ok`, `ok: output.approved equals true`, `ok: not output.approved equals true`, `cap-hit`… */
  name: string;
  verdict: Exclude<Verdict, "retry">;
  capHit: boolean;
  drive:
    | {
        kind: "complete";
        payload: Record<string, unknown>;
        output: JsonValue | undefined;
        /**
         * The stage's exit hook computes the output its rules read: the drive fits what the real
         * hook hands on to `onOutput`, or stubs it with `output` where it cannot.
         */
        stubsExit?: true;
        onOutput?: Requirement[];
      }
    | { kind: "cap-hit"; attempts: number; turnCap: number }
    | { kind: "gate"; answer: "defer" | "block" }
    | { kind: "grant-suspended"; probe: { tool: string; args: Record<string, unknown> } }
    /**
     * `output`: what the code hands on in this split of its rules, when they read its output, and
     * `onOutput`, the split (what the real code's output is fitted to); for a sub-pipeline stage,
     * `ending`: the stage and outcome its run ends with, and how it ends.
     */
    | { kind: "code"; output?: JsonValue; onOutput?: Requirement[]; ending?: SubPipelineEnding }
    | { kind: "inputs-refused" }
    /** `usage`: what the stage's first reply reports, reaching a token budget; none when only a cost or time budget applies. */
    | { kind: "budget-exceeded"; usage?: { inputTokens?: number; outputTokens?: number } }
    /** An ask stage answered with `value` (none: nobody answers, and the run suspends). */
    | { kind: "answer"; value?: JsonValue }
    /** Nobody answers by the deadline: an ask's default answer (`value`), or a failed stage. */
    | {
        kind: "timed-out";
        wait: "ask" | "grant";
        value?: JsonValue;
        probe?: { tool: string; args: Record<string, unknown> };
      };
  /** The run stops here, waiting for an answer: the path ends `suspended`. */
  suspends?: boolean;
}

/** An outcome no payload can reach: the requirements the completionSchema rules out, and why. */
export interface UnreachableOutcome {
  stage: string;
  name: string;
  reason: string;
}

export interface StageOutcomes {
  outcomes: StageOutcome[];
  unsatisfiable: UnreachableOutcome[];
}

/** Every outcome of a stage that its pipeline's rules, gate and policy can tell apart. */
export function stageOutcomes(pipeline: PipelineDefinition, stageId: string): StageOutcomes {
  const stage = pipeline.stages[stageId] as PipelineStage;
  if (stage.kind === "ask") return askOutcomes(pipeline, stage);
  if (stage.kind === "pipeline" && payloadConditions(pipeline, stageId).length > 0)
    return subPipelineOutcomes(pipeline, stage);
  if (stage.kind !== "llm") {
    if (computesOutput(pipeline, stageId)) return codeOutputOutcomes(pipeline, stageId);
    return {
      outcomes: (["ok", "fail"] as const).map((verdict) => ({
        stage: stageId,
        name: verdict,
        verdict,
        capHit: false,
        drive: { kind: "code" as const },
      })),
      unsatisfiable: [],
    };
  }
  const { definition } = stage;
  const conditions = payloadConditions(pipeline, stageId).slice(0, MAX_SPLIT_CONDITIONS);
  const outcomes: StageOutcome[] = [];
  const unsatisfiable: UnreachableOutcome[] = [];
  for (const requirements of splitsOf(pipeline, stageId, conditions, definition.completionSchema)) {
    const name = ["ok", requirements.map(describeRequirement).join(", ")]
      .filter(Boolean)
      .join(": ");
    const completion = completionFor(pipeline, stageId, requirements);
    if (completion.ok)
      outcomes.push({
        stage: stageId,
        name,
        verdict: "ok",
        capHit: false,
        drive: completion.drive,
      });
    else unsatisfiable.push({ stage: stageId, name, reason: completion.reason });
  }
  const { maxAttempts } = definition.retryPolicy;
  outcomes.push({
    stage: stageId,
    name: maxAttempts > 1 ? "retries-exhausted" : "cap-hit",
    verdict: "fail",
    capHit: true,
    drive: { kind: "cap-hit", attempts: maxAttempts, turnCap: definition.turnCap },
  });
  if (definition.inputsSchema || missesUpstream(pipeline, stageId, []))
    outcomes.push({
      stage: stageId,
      name: "inputs-refused",
      verdict: "fail",
      capHit: false,
      drive: { kind: "inputs-refused" },
    });
  const budgeted = budgetExceededOutcome(pipeline, stageId);
  if (budgeted) outcomes.push(budgeted);
  if (pipeline.hooks[stageId]?.gate)
    outcomes.push(...gateOutcomes(stageId, definition.resolutionPolicy));
  const probe = GRANT_PROBES.find((p) => !definition.allowedTools.includes(p.tool));
  if (probe && pipeline.grants.timeout?.fallback === "fail")
    outcomes.push({
      stage: stageId,
      name: "grant-timed-out",
      verdict: "fail",
      capHit: false,
      drive: { kind: "timed-out", wait: "grant", probe },
    });
  if (probe)
    outcomes.push({
      stage: stageId,
      name: "grant-suspended",
      verdict: "ok",
      capHit: false,
      drive: { kind: "grant-suspended", probe },
      suspends: true,
    });
  return { outcomes, unsatisfiable };
}

/**
 * A stage under a budget (its own or the run's) can be stopped by it; a token limit is reached
 * by one reply reporting that many tokens, which is how a test drives it.
 */
function budgetExceededOutcome(
  pipeline: PipelineDefinition,
  stageId: string,
): StageOutcome | undefined {
  const budgets = [pipeline.budget?.stages?.[stageId], pipeline.budget?.run].filter(
    (budget) => budget !== undefined,
  );
  if (budgets.length === 0) return undefined;
  const inputTokens = budgets.find((b) => b.maxInputTokens !== undefined)?.maxInputTokens;
  const outputTokens = budgets.find((b) => b.maxOutputTokens !== undefined)?.maxOutputTokens;
  const usage =
    inputTokens !== undefined
      ? { inputTokens }
      : outputTokens !== undefined
        ? { outputTokens }
        : undefined;
  return {
    stage: stageId,
    name: "budget-exceeded",
    verdict: "fail",
    capHit: false,
    drive: { kind: "budget-exceeded", ...(usage && { usage }) },
  };
}

/** The completion payload for one split of an LLM stage's rules, and the output it hands on. */
function completionFor(
  pipeline: PipelineDefinition,
  stageId: string,
  requirements: readonly Requirement[],
):
  | { ok: true; drive: Extract<StageOutcome["drive"], { kind: "complete" }> }
  | { ok: false; reason: string } {
  const stage = pipeline.stages[stageId] as Extract<PipelineStage, { kind: "llm" }>;
  const { completionSchema } = stage.definition;
  if (computesOutput(pipeline, stageId)) {
    const onOutput = requirements.filter((r) => isOutputCondition(r.condition));
    const payload = payloadFor(
      completionSchema,
      requirements.filter((r) => !isOutputCondition(r.condition)),
    );
    const output = payloadFor(ANY_OBJECT, onOutput);
    if (!payload.ok) return payload;
    if (!output.ok) return output;
    const refused = refusedTwice(pipeline, stageId, payload.value);
    if (refused) return { ok: false, reason: refused };
    const drive = { kind: "complete" as const, payload: payload.value, stubsExit: true as const };
    return { ok: true, drive: { ...drive, output: output.value as JsonValue, onOutput } };
  }
  const handOn = (parsed: Record<string, unknown>) =>
    defaultExit({ parsed, outputFields: stage.outputFields } as ExitInput);
  const payload = payloadFor(completionSchema, requirements, 1, handOn);
  if (!payload.ok) return payload;
  const refused = refusedTwice(pipeline, stageId, payload.value);
  if (refused) return { ok: false, reason: refused };
  return {
    ok: true,
    drive: { kind: "complete", payload: payload.value, output: handOn(payload.value) },
  };
}

/**
 * Why no run completes the stage with `payload`, when its `refuseCompletion` hook refuses it
 * (as pi-workflows' `loop` under `loopable: false`) and refuses it again when called once more
 * with it, the refusal before it in the transcript — as a drive scripts the call (a two-step
 * confirmation, pi-workflows' `cancel`, is let through the second time).
 */
function refusedTwice(
  pipeline: PipelineDefinition,
  stageId: string,
  payload: Record<string, unknown>,
): string | undefined {
  const refuse = pipeline.hooks[stageId]?.refuseCompletion;
  const stage = pipeline.stages[stageId];
  if (!refuse || stage?.kind !== "llm") return undefined;
  const { definition } = stage;
  const parsed = payload as JsonValue;
  const first = refuse({ stage: definition, parsed, transcript: [] });
  if (first === undefined) return undefined;
  const call = { toolCallId: "probe", tool: definition.completionTool, args: parsed };
  const again = refuse({
    stage: definition,
    parsed,
    transcript: [
      { role: "assistant", text: "", calls: [call] },
      refusalEntry(definition, call.toolCallId, first),
    ],
  });
  return again === undefined
    ? undefined
    : `the stage's refuseCompletion hook refuses ${JSON.stringify(payload)}, and again when it is called with it once more: ${again}`;
}

/** A code or command stage whose rules read its output: an `ok` per split of them, and `fail`. */
function codeOutputOutcomes(pipeline: PipelineDefinition, stageId: string): StageOutcomes {
  const conditions = payloadConditions(pipeline, stageId)
    .filter(isOutputCondition)
    .slice(0, MAX_SPLIT_CONDITIONS);
  const outcomes: StageOutcome[] = [];
  const unsatisfiable: UnreachableOutcome[] = [];
  for (const requirements of splitsOf(pipeline, stageId, conditions)) {
    const name = `ok: ${requirements.map(describeRequirement).join(", ")}`;
    const output = payloadFor(ANY_OBJECT, requirements);
    if (output.ok)
      outcomes.push({
        stage: stageId,
        name,
        verdict: "ok",
        capHit: false,
        drive: { kind: "code", output: output.value as JsonValue, onOutput: requirements },
      });
    else unsatisfiable.push({ stage: stageId, name, reason: output.reason });
  }
  const fail = { stage: stageId, name: "fail", verdict: "fail" as const, capHit: false };
  outcomes.push({ ...fail, drive: { kind: "code" } });
  return { outcomes, unsatisfiable };
}

/** How a sub-pipeline's run ends: the stage that ends it, with which of its outcomes, and where. */
export interface SubPipelineEnding {
  stage: string;
  outcome: string;
  end: "done" | "failed" | "cancelled";
}

/**
 * A sub-pipeline stage whose rules read its result's `output`: one outcome per split of those
 * rules (and verdict) that a way its run ends gives — the stage whose outcome ends it, sent to
 * `done` (`ok`), `fail` or `cancel` (`fail`), hands on the output the sub-pipeline does.
 */
function subPipelineOutcomes(
  pipeline: PipelineDefinition,
  stage: Extract<PipelineStage, { kind: "pipeline" }>,
): StageOutcomes {
  const sub = stage.pipeline;
  const conditions = payloadConditions(pipeline, stage.id).slice(0, MAX_SPLIT_CONDITIONS);
  const found = new Map<string, StageOutcome>();
  for (const ender of Object.keys(sub.stages)) {
    for (const outcome of stageOutcomes(sub, ender).outcomes) {
      if (outcome.suspends) continue;
      const result = resultFor(outcome);
      const to = routeOf(sub, ender, result, { ctx: {}, visits: { [ender]: 1 } });
      const end =
        to === DONE ? "done" : to === FAIL ? "failed" : to === CANCEL ? "cancelled" : undefined;
      if (end === undefined) continue;
      const verdict = end === "done" ? ("ok" as const) : ("fail" as const);
      const facts = { verdict, output: result.output, ctx: {}, visits: {} };
      const split = conditions.map((condition) => ({
        condition,
        holds: holds(condition, facts, {}),
      }));
      const name = [verdict, split.map(describeRequirement).join(", ")].filter(Boolean).join(": ");
      if (found.has(name)) continue;
      found.set(name, {
        stage: stage.id,
        name,
        verdict,
        capHit: false,
        drive: {
          kind: "code",
          output: result.output ?? {},
          ending: { stage: ender, outcome: outcome.name, end },
        },
      });
    }
  }
  return { outcomes: [...found.values()], unsatisfiable: [] };
}

/**
 * An ask stage's outcomes: one answer per combination of its rules' `output` conditions that its
 * schema allows (the value is the output), and nobody answering, which suspends the run.
 */
function askOutcomes(
  pipeline: PipelineDefinition,
  stage: Extract<PipelineStage, { kind: "ask" }>,
): StageOutcomes {
  const conditions = payloadConditions(pipeline, stage.id).slice(0, MAX_SPLIT_CONDITIONS);
  const outcomes: StageOutcome[] = [];
  const unsatisfiable: UnreachableOutcome[] = [];
  for (const requirements of splitsOf(pipeline, stage.id, conditions, stage.schema)) {
    const name = ["answered", requirements.map(describeRequirement).join(", ")]
      .filter(Boolean)
      .join(": ");
    const value = payloadFor(stage.schema, requirements);
    if (value.ok)
      outcomes.push({
        stage: stage.id,
        name,
        verdict: "ok",
        capHit: false,
        drive: { kind: "answer", value: value.value as JsonValue },
      });
    else unsatisfiable.push({ stage: stage.id, name, reason: value.reason });
  }
  const fallback = stage.timeout?.fallback;
  if (fallback !== undefined)
    outcomes.push({
      stage: stage.id,
      name: "timed-out",
      verdict: fallback === "fail" ? "fail" : "ok",
      capHit: false,
      drive: {
        kind: "timed-out",
        wait: "ask",
        ...(fallback !== "fail" && { value: fallback.answer }),
      },
    });
  outcomes.push({
    stage: stage.id,
    name: "unanswered",
    verdict: "ok",
    capHit: false,
    drive: { kind: "answer" },
    suspends: true,
  });
  return { outcomes, unsatisfiable };
}

/** A gate's `defer` and `block` under each `resolutionPolicy`. */
export function gateOutcomes(
  stageId: string,
  policy: "retry-later" | "skip" | "fail",
): StageOutcome[] {
  return (["defer", "block"] as const).map((answer) => {
    const verdict = policy === "skip" ? "skip" : "fail";
    const suspends = policy === "retry-later" && answer === "defer";
    return {
      stage: stageId,
      name: `gate-${answer}`,
      verdict,
      capHit: false,
      drive: { kind: "gate", answer },
      ...(suspends && { suspends }),
    };
  });
}

/** The StageResult an outcome hands to the transition rules. */
export function resultFor(
  outcome: StageOutcome,
  stageExecutionId = `${outcome.stage}/1`,
): StageResult {
  const { drive } = outcome;
  const payload = drive.kind === "complete" ? drive.payload : undefined;
  return {
    stageId: outcome.stage,
    stageExecutionId,
    verdict: outcome.verdict,
    capHit: outcome.capHit,
    attemptCount: drive.kind === "cap-hit" ? drive.attempts : 1,
    ...(payload !== undefined && { parsed: payload as never }),
    ...(drive.kind === "complete" && drive.output !== undefined && { output: drive.output }),
    // A code stage's output is whatever its code returns: an object, as far as the model knows.
    ...(drive.kind === "code" && { output: drive.output ?? {} }),
    ...(drive.kind === "answer" && drive.value !== undefined && { output: drive.value }),
    ...(drive.kind === "timed-out" && drive.value !== undefined && { output: drive.value }),
    ...(drive.kind === "timed-out" &&
      outcome.verdict === "fail" && {
        error: {
          class: "Cancellation",
          code: "Cancellation/WaitTimedOut",
          message: "nobody answered by the deadline",
          context: {},
        },
      }),
    ...(drive.kind === "budget-exceeded" && {
      error: {
        class: "Cancellation",
        code: "Cancellation/BudgetExceeded",
        message: "a budget is spent; the model call was not made",
        context: {},
      },
    }),
  };
}
